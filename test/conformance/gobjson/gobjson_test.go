package gobjson

import (
	"bytes"
	"encoding/gob"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/argoproj/argo-rollouts/pkg/apis/rollouts/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestCompareReportsEveryKindOfDifference(t *testing.T) {
	want := map[string]any{"a": 1, "b": "x", "list": []any{1, 2}, "nested": map[string]any{"n": int64(1) << 60}}
	cases := map[string]string{
		`{"a":2,"b":"x","list":[1,2],"nested":{"n":1152921504606846976}}`:          "$.a: want 1, got 2",
		`{"a":1,"list":[1,2],"nested":{"n":1152921504606846976}}`:                  "$.b: missing",
		`{"a":1,"b":"x","c":true,"list":[1,2],"nested":{"n":1152921504606846976}}`: "$.c: unexpected true",
		`{"a":1,"b":"x","list":[1],"nested":{"n":1152921504606846976}}`:            "$.list: want 2 elements, got 1",
		`{"a":1,"b":"x","list":[1,2],"nested":{"n":1152921504606846977}}`:          "$.nested.n: want",
	}
	for got, expected := range cases {
		diffs, err := Compare(want, []byte(got), 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(diffs) != 1 || !strings.HasPrefix(diffs[0], expected) {
			t.Errorf("Compare(%s) = %q, want one line starting %q", got, diffs, expected)
		}
	}
	if diffs, _ := Compare(want, []byte(`{"b":"x","a":1.0,"list":[1,2],"nested":{"n":1152921504606846976},"zero":0,"f":false,"e":{},"l":[]}`), 10); len(diffs) != 0 {
		t.Errorf("equal-after-normalization trees differ: %q", diffs)
	}
}

func TestCanonicalFollowsGobRules(t *testing.T) {
	type inner struct {
		Visible string
		hidden  string
		Fn      func()
		Ch      chan int
	}
	type outer struct {
		Ptr   *inner
		Bytes []byte
		Big   int64
		Small uint8
		Map   map[int]string
		When  *metav1.Time
		Plain time.Time
	}
	value := outer{
		Ptr: &inner{Visible: "v", hidden: "h"}, Bytes: []byte{1, 2, 3}, Big: 1 << 60, Small: 7,
		Map: map[int]string{-3: "x"}, When: &metav1.Time{Time: time.Unix(1, 5).In(time.FixedZone("X", 3600))},
		Plain: time.Unix(0, 0).UTC(),
	}
	got, err := ToGeneric(Canonical(value))
	if err != nil {
		t.Fatal(err)
	}
	expected := `{"Big":"1152921504606846976","Bytes":{"$bytes":"AQID"},"Map":{"-3":"x"},"Plain":{"$offset":null,"$time":"1970-01-01T00:00:00Z"},"Ptr":{"Visible":"v"},"Small":7,"When":{"$offset":3600,"$time":"1970-01-01T00:00:01.000000005Z"}}`
	if diffs := Diff(Normalize(got), Normalize(mustParse(t, expected)), 10); len(diffs) > 0 {
		t.Errorf("canonical differs: %q", diffs)
	}
}

// TestCanonicalSurvivesRealGob: the canonical form of a value equals that of its gob round trip,
// i.e. the walker sends exactly what gob sends (exported fields, flattened pointers, zero omission
// absorbed by normalization).
func TestCanonicalSurvivesRealGob(t *testing.T) {
	rollout := &v1alpha1.Rollout{}
	rollout.Name = "r"
	rollout.Labels = map[string]string{"a": "b", "empty": ""}
	idx := int32(0)
	rollout.Status.CurrentStepIndex = &idx
	rollout.Status.Canary.StepPluginStatuses = []v1alpha1.StepPluginStatus{{Index: 3, Status: []byte(`{"x":1}`)}}
	var buf bytes.Buffer
	if err := gob.NewEncoder(&buf).Encode(rollout); err != nil {
		t.Fatal(err)
	}
	var decoded v1alpha1.Rollout
	if err := gob.NewDecoder(&buf).Decode(&decoded); err != nil {
		t.Fatal(err)
	}
	want, _ := ToGeneric(Canonical(rollout))
	got, _ := ToGeneric(Canonical(&decoded))
	if diffs := Diff(Normalize(want), Normalize(got), 10); len(diffs) > 0 {
		t.Errorf("gob round trip changed the canonical form: %q", diffs)
	}
}

func mustParse(t *testing.T, s string) any {
	t.Helper()
	v, err := ParseJSON([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// randomTree builds a tree of the types Canonical produces, with the awkward cases ToGeneric's
// direct conversion must get exactly like json.Marshal: big and negative integers, floats that
// format with exponents, strings that are not valid UTF-8, nil maps and slices.
func randomTree(r *rand.Rand, depth int) any {
	kinds := 9
	if depth > 0 {
		kinds = 13
	}
	switch r.IntN(kinds) {
	case 0:
		return nil
	case 1:
		return r.IntN(2) == 0
	case 2:
		return r.Int64() - r.Int64()
	case 3:
		return r.Uint64()
	case 4:
		return r.NormFloat64() * math.Pow(10, float64(r.IntN(60)-30))
	case 5:
		return int(r.Int32())
	case 6:
		return string([]byte{'a', byte(r.IntN(256)), 0xe2, byte(r.IntN(256))})
	case 7:
		return []string{"", "x", "\u2028<&>", "\x00"}[r.IntN(4)]
	case 8:
		return float64(r.IntN(3))
	case 9:
		return map[string]any(nil)
	case 10:
		return []any(nil)
	case 11:
		out := make([]any, r.IntN(4))
		for i := range out {
			out[i] = randomTree(r, depth-1)
		}
		return out
	default:
		out := map[string]any{}
		for range r.IntN(4) {
			out[fmt.Sprintf("k%d", r.IntN(6))] = randomTree(r, depth-1)
		}
		return out
	}
}

func roundTrip(t *testing.T, v any) any {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return mustParse(t, string(data))
}

func TestToGenericEqualsTheJSONRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	direct := 0
	for i := range 20000 {
		tree := randomTree(r, 4)
		if _, ok := directGeneric(tree); ok {
			direct++
		}
		got, err := ToGeneric(tree)
		if err != nil {
			t.Fatal(err)
		}
		if want := roundTrip(t, tree); !reflect.DeepEqual(got, want) {
			t.Fatalf("tree %d: ToGeneric = %#v, the JSON round trip gives %#v", i, got, want)
		}
	}
	if direct < 19000 {
		t.Errorf("only %d of 20000 trees were converted directly: the test compares the round trip with itself", direct)
	}
	// A map whose keys json.Marshal rewrites (invalid UTF-8) takes the round trip as a whole.
	merged, err := ToGeneric(map[string]any{"a\xff": int64(1), "a\xfe": int64(2)})
	if err != nil || len(merged.(map[string]any)) != 1 {
		t.Errorf("keys that json.Marshal merges: got %#v, %v; want one key", merged, err)
	}
}

// mutate changes at most one place of a generic tree: a leaf replaced (maybe by a zero that
// normalization drops), a key added or removed, an element added, or nothing.
func mutate(r *rand.Rand, v any) any {
	switch x := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		switch op := r.IntN(5); {
		case op == 0:
			x[fmt.Sprintf("new%d", r.IntN(3))] = randomTree(r, 1)
		case op == 1 && len(keys) > 0:
			delete(x, keys[r.IntN(len(keys))])
		case len(keys) > 0:
			k := keys[r.IntN(len(keys))]
			x[k] = mutate(r, x[k])
		}
		return x
	case []any:
		switch op := r.IntN(4); {
		case op == 0:
			return append(x, randomTree(r, 1))
		case len(x) > 0:
			i := r.IntN(len(x))
			x[i] = mutate(r, x[i])
		}
		return x
	}
	switch r.IntN(4) {
	case 0:
		return v
	case 1:
		return []any{nil, false, "", int64(0), json.Number("0.0")}[r.IntN(5)]
	default:
		return randomTree(r, 0)
	}
}

func TestEqualAgreesWithDiff(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	equal := 0
	for i := range 20000 {
		a, _ := ToGeneric(randomTree(r, 3))
		b, _ := ToGeneric(mutate(r, roundTrip(t, a)))
		a, b = Normalize(a), Normalize(b)
		same := len(Diff(a, b, 1)) == 0
		if Equal(a, b) != same {
			t.Fatalf("pair %d: Equal = %v, Diff finds no difference = %v\n  a=%#v\n  b=%#v", i, !same, same, a, b)
		}
		if same {
			equal++
		}
	}
	if equal < 5000 {
		t.Errorf("only %d of 20000 pairs were equal: the test does not exercise Equal's true branch", equal)
	}
	if !Equal(mustParse(t, `{"n":1e3}`), mustParse(t, `{"n":1000}`)) || Equal(mustParse(t, `[1,2]`), mustParse(t, `[1]`)) {
		t.Error("Equal disagrees with Diff's number and length rules")
	}
}

func parseThenNormalize(data []byte) (any, error) {
	generic, err := ParseJSON(data)
	if err != nil {
		return nil, err
	}
	return Normalize(generic), nil
}

func assertParsesLikeTheTwoSteps(t *testing.T, data []byte) {
	t.Helper()
	want, wantErr := parseThenNormalize(data)
	got, gotErr := ParseNormalized(data)
	if (wantErr == nil) != (gotErr == nil) || !reflect.DeepEqual(got, want) {
		t.Fatalf("ParseNormalized(%q) = %#v, %v; Normalize(ParseJSON) = %#v, %v", data, got, gotErr, want, wantErr)
	}
}

// Texts as JSON.stringify and json.Marshal write them, the same with escapes, spacing and
// duplicate keys, and byte-level mutations of them (mostly invalid JSON, which must fail alike).
func TestParseNormalizedEqualsParseThenNormalize(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	fixed := []string{
		`{"a":1,"a":0}`, `{"a":0,"a":1}`, `{"a":{},"b":[],"c":[0,false,"",{},[]],"d":-0.0e5,"e":1e-400}`,
		`{"$time":"2020-01-01T01:00:00.500+01:00"}`, `{"$time":0}`, `"\ud800x\udc00\ud83d\ude00\u00e9\/\b\f\n\r\t\\"`,
		"\"a\xffb\"", `{"k\u0000":1}`, ` [ 1 , 2 ] `, `{"a":1}}`, `{"a":1} x`, `[1,]`, `01`, `-`, `1.`, `1e`, `.5`,
		`"\u12"`, "\"\x01\"", `tru`, `nul`, `[`, `{"a"`, `{"a":}`, `{,}`, `"\q"`, ``, `  `, `0`, `false`, `{"":""}`,
		strings.Repeat("[", 1200) + strings.Repeat("]", 1200),
	}
	for _, s := range fixed {
		assertParsesLikeTheTwoSteps(t, []byte(s))
	}
	for range 20000 {
		data, err := json.Marshal(randomTree(r, 4))
		if err != nil {
			continue // NaN/Inf floats: json.Marshal refuses them
		}
		assertParsesLikeTheTwoSteps(t, data)
		if p := (parser{data: data}); !fastPath(&p) {
			t.Fatalf("%s took the encoding/json path: the test compares encoding/json with itself", data)
		}
		indented, _ := json.MarshalIndent(json.RawMessage(data), "", "\t ")
		assertParsesLikeTheTwoSteps(t, indented)
		mutated := bytes.Clone(data)
		for range 1 + r.IntN(3) {
			switch i := r.IntN(len(mutated)); r.IntN(3) {
			case 0:
				mutated[i] = byte(r.IntN(256))
			case 1:
				mutated[i] = `"\{}[],:0e-.u`[r.IntN(13)]
			default:
				mutated = append(mutated[:i:i], mutated[i+1:]...)
			}
			if len(mutated) == 0 {
				break
			}
		}
		assertParsesLikeTheTwoSteps(t, mutated)
	}
}

// fastPath reports whether the one-pass parser handles data itself. Marshal's output qualifies unless it holds
// escapes (\u0000, \", \\ and U+FFFD from invalid UTF-8 come back unescaped or not at all in a JSON text).
func fastPath(p *parser) bool {
	if bytes.Contains(p.data, []byte{'\\'}) {
		return true
	}
	_, _, ok := p.value(0)
	return ok && p.pos == len(p.data)
}

func FuzzParseNormalized(f *testing.F) {
	f.Add([]byte(`{"a":[1,{"$time":"2020-01-01T00:00:00Z","b":"\u00e9"}],"a":null}`))
	f.Fuzz(func(t *testing.T, data []byte) { assertParsesLikeTheTwoSteps(t, data) })
}
