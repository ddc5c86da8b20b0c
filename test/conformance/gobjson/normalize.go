package gobjson

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/big"
	"sort"
	"strings"
	"time"
)

// ToGeneric turns a Go tree (from Canonical, a view, or anything json.Marshal accepts) into the
// generic form json.Unmarshal produces with UseNumber, so both sides of a comparison share types.
func ToGeneric(v any) (any, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return ParseJSON(data)
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
	w, err := ToGeneric(want)
	if err != nil {
		return nil, fmt.Errorf("encoding expected value: %w", err)
	}
	g, err := ParseJSON(gotJSON)
	if err != nil {
		return nil, fmt.Errorf("plugin echo is not valid JSON: %w", err)
	}
	return Diff(Normalize(w), Normalize(g), limit), nil
}
