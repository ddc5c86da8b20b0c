package gobjson

import (
	"bytes"
	"encoding/gob"
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
