package gobjson

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/big"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// ToGeneric turns a Go tree (from Canonical, a view, or anything json.Marshal accepts) into the
// generic form json.Unmarshal produces with UseNumber, so both sides of a comparison share types.
// A tree made only of the types Canonical produces is converted directly (the differential fuzz
// spent a fifth of its time in the JSON round trip); anything else takes the round trip.
func ToGeneric(v any) (any, error) {
	if out, ok := directGeneric(v); ok {
		return out, nil
	}
	data, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return ParseJSON(data)
}

// directGeneric is json.Marshal followed by ParseJSON for the types Canonical produces, or false
// for a value of any other type (and for map keys that are not valid UTF-8, which json.Marshal
// rewrites and may thereby merge). Strings that are not valid UTF-8 and floats take the round trip
// one by one, so that json.Marshal's own rewriting and formatting apply.
func directGeneric(v any) (any, bool) {
	switch x := v.(type) {
	case nil:
		return nil, true
	case bool:
		return x, true
	case string:
		if utf8.ValidString(x) {
			return x, true
		}
		return viaJSON(x)
	case int:
		return json.Number(strconv.FormatInt(int64(x), 10)), true
	case int64:
		return json.Number(strconv.FormatInt(x, 10)), true
	case uint64:
		return json.Number(strconv.FormatUint(x, 10)), true
	case float64:
		return viaJSON(x)
	case []any:
		if x == nil {
			return nil, true
		}
		out := make([]any, len(x))
		for i, child := range x {
			n, ok := directGeneric(child)
			if !ok {
				return nil, false
			}
			out[i] = n
		}
		return out, true
	case map[string]any:
		if x == nil {
			return nil, true
		}
		out := make(map[string]any, len(x))
		for k, child := range x {
			if !utf8.ValidString(k) {
				return nil, false
			}
			n, ok := directGeneric(child)
			if !ok {
				return nil, false
			}
			out[k] = n
		}
		return out, true
	}
	return nil, false
}

func viaJSON(v any) (any, bool) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, false
	}
	out, err := ParseJSON(data)
	return out, err == nil
}

// ParseJSON decodes JSON keeping numbers exact (json.Number).
func ParseJSON(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var out any
	if err := dec.Decode(&out); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, fmt.Errorf("trailing data after JSON value")
	}
	return out, nil
}

// Normalize drops null, false, 0, "", empty arrays and empty objects from objects, recursively.
// Array elements keep their positions (a dropped element becomes null). "$time" strings are
// re-rendered so that equal instants compare equal whatever their fractional-digit spelling.
func Normalize(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, child := range x {
			n := Normalize(child)
			if k == "$time" {
				n = canonicalTime(n)
			}
			if !isEmpty(n) {
				out[k] = n
			}
		}
		if len(out) == 0 {
			return nil
		}
		return out
	case []any:
		if len(x) == 0 {
			return nil
		}
		out := make([]any, len(x))
		for i, child := range x {
			n := Normalize(child)
			if isEmpty(n) {
				n = nil
			}
			out[i] = n
		}
		return out
	}
	return v
}

func canonicalTime(v any) any {
	s, ok := v.(string)
	if !ok {
		return v
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return v
	}
	return t.UTC().Format(time.RFC3339Nano)
}

func isEmpty(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case bool:
		return !x
	case string:
		return x == ""
	case json.Number:
		return numberIsZero(x)
	case float64:
		return x == 0
	case map[string]any:
		return len(x) == 0
	case []any:
		return len(x) == 0
	}
	return false
}

func numberIsZero(n json.Number) bool {
	f, ok := new(big.Float).SetString(string(n))
	return ok && f.Sign() == 0
}

// Diff lists the differences between two normalized generic trees as "path: want X, got Y" lines
// (at most limit of them, sorted by path).
func Diff(want, got any, limit int) []string {
	var out []string
	diff("$", want, got, &out)
	sort.Strings(out)
	if len(out) > limit {
		out = append(out[:limit], fmt.Sprintf("... and %d more", len(out)-limit))
	}
	return out
}

func diff(path string, want, got any, out *[]string) {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			*out = append(*out, fmt.Sprintf("%s: want object, got %s", path, short(got)))
			return
		}
		for k, wv := range w {
			gv, present := g[k]
			if !present {
				*out = append(*out, fmt.Sprintf("%s.%s: missing (want %s)", path, k, short(wv)))
				continue
			}
			diff(path+"."+k, wv, gv, out)
		}
		for k, gv := range g {
			if _, present := w[k]; !present {
				*out = append(*out, fmt.Sprintf("%s.%s: unexpected %s", path, k, short(gv)))
			}
		}
	case []any:
		g, ok := got.([]any)
		if !ok {
			*out = append(*out, fmt.Sprintf("%s: want array, got %s", path, short(got)))
			return
		}
		if len(w) != len(g) {
			*out = append(*out, fmt.Sprintf("%s: want %d elements, got %d", path, len(w), len(g)))
		}
		for i := range min(len(w), len(g)) {
			diff(fmt.Sprintf("%s[%d]", path, i), w[i], g[i], out)
		}
	case json.Number:
		g, ok := got.(json.Number)
		if !ok || !numbersEqual(w, g) {
			*out = append(*out, fmt.Sprintf("%s: want %s, got %s", path, short(want), short(got)))
		}
	default:
		if want != got {
			*out = append(*out, fmt.Sprintf("%s: want %s, got %s", path, short(want), short(got)))
		}
	}
}

// Equal reports whether Diff would find no difference (without building any path or message:
// the fuzz compares tens of thousands of trees, nearly all of them equal).
func Equal(want, got any) bool {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok || len(g) != len(w) {
			return false
		}
		for k, wv := range w {
			gv, present := g[k]
			if !present || !Equal(wv, gv) {
				return false
			}
		}
		return true
	case []any:
		g, ok := got.([]any)
		if !ok || len(w) != len(g) {
			return false
		}
		for i := range w {
			if !Equal(w[i], g[i]) {
				return false
			}
		}
		return true
	case json.Number:
		g, ok := got.(json.Number)
		return ok && numbersEqual(w, g)
	default:
		return want == got
	}
}

func numbersEqual(a, b json.Number) bool {
	if a == b {
		return true
	}
	ai, aok := new(big.Int).SetString(string(a), 10)
	bi, bok := new(big.Int).SetString(string(b), 10)
	if aok && bok {
		return ai.Cmp(bi) == 0
	}
	af, aerr := a.Float64()
	bf, berr := b.Float64()
	return aerr == nil && berr == nil && af == bf
}

func short(v any) string {
	if v == nil {
		return "nothing"
	}
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%v", v)
	}
	s := string(data)
	if len(s) > 160 {
		s = s[:160] + "…"
	}
	return strings.ReplaceAll(s, "\n", " ")
}

// Compare normalizes both trees (want: any Go tree; gotJSON: the plugin's JSON text) and returns
// the differences.
func Compare(want any, gotJSON []byte, limit int) ([]string, error) {
	g, err := ParseJSON(gotJSON)
	if err != nil {
		return nil, fmt.Errorf("plugin echo is not valid JSON: %w", err)
	}
	return CompareParsed(want, g, limit)
}

// CompareParsed is Compare for a plugin's JSON already parsed by ParseJSON.
func CompareParsed(want, got any, limit int) ([]string, error) {
	w, err := ToGeneric(want)
	if err != nil {
		return nil, fmt.Errorf("encoding expected value: %w", err)
	}
	w, g := Normalize(w), Normalize(got)
	if Equal(w, g) {
		return nil, nil
	}
	return Diff(w, g, limit), nil
}

// CompareInterface is CompareParsed(Interface(name, v), got, limit) for a got already normalized
// (ParseNormalized), with the expected tree built in one walk (NormalizedInterface).
func CompareInterface(name string, v, normalizedGot any, limit int) []string {
	w := NormalizedInterface(name, v)
	if Equal(w, normalizedGot) {
		return nil
	}
	return Diff(w, normalizedGot, limit)
}
