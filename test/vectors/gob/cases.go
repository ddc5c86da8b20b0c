package main

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"time"
)

// A vector case: values sent in order on one gob stream (one encoder).
type vectorCase struct {
	name   string
	values []any
}

func ptr[T any](v T) *T { return &v }

func anyPtr(v any) *any { return &v }

var (
	fixedZone     = time.FixedZone("CEST", 2*3600)
	subMinuteZone = time.FixedZone("LMT", 3600+30)       // +01:00:30 → version 2
	negSubMinute  = time.FixedZone("NLMT", -(3600 + 30)) // -01:00:30 → Go misreads its own bytes
	instant       = time.Date(2023, 11, 14, 22, 13, 20, 0, time.UTC)
)

func init() {
	registerName("step.RunArgs", RunArgs{})
	registerName("vectors.Inner", Inner{})
	registerName("vectors.Envelope", Envelope{})
	registerName("vectors.Point", Point{})
}

func basicsValues() []any {
	return []any{
		true, false,
		0, -1, 1, 63, 64, -64, -65, 127, 128, 255, 256, -129,
		int64(math.MaxInt64), int64(math.MinInt64),
		int64(1 << 53), int64(1<<53 + 1), int64(-(1 << 53)), int64(-(1 << 53) - 1),
		int64(math.MaxInt64 - 1), int64(1<<53 - 1), int64(-(1<<53 - 1)),
		uint(0), uint(1), uint(127), uint(128), uint64(1 << 32), uint64(1<<53 - 1), uint64(1 << 53),
		uint64(1<<53 + 1), uint64(math.MaxUint64), uint64(math.MaxInt64 + 1),
		int8(-128), uint8(255), int32(math.MinInt32), uint32(math.MaxUint32),
		0.0, math.Copysign(0, -1), 17.0, 0.1, -2.5, math.NaN(), math.Inf(1), math.Inf(-1),
		5e-324, math.MaxFloat64, float32(0.1), float32(-1e30),
		complex(1, 2), complex(math.NaN(), math.Copysign(0, -1)), complex64(complex(0.5, -0.25)),
		"", "hello", "héllo wörld ✓ 𝄞 日本語", "\ufeffbom", "\xff\xfe bad utf-8", strings.Repeat("long ", 60),
		[]byte{}, []byte{0, 1, 255}, json.RawMessage(`{"n":1}`),
	}
}

func structValues() []any {
	one := 1
	zero := 0
	return []any{
		Basics{},
		Basics{
			B: true, I: -7, I8: -8, I64: math.MinInt64, U: 7, U8: 200, U64: math.MaxUint64,
			F32: 1.5, F64: 0.1, C: complex(0, 1), S: "s", Bs: []byte("bytes"), Raw: json.RawMessage(`[1,2]`),
			Ptr: &one, PtrZero: &zero, Any: nil, private: 5, Ch: make(chan int), Fn: func() {},
		},
		Basics{F64: math.Copysign(0, -1), S: "", Any: "a string in an interface"},
		Basics{Any: 42},
		Basics{Any: []string{"x", "y"}},
		Outer{},
		Outer{
			Title:    "outer",
			Inner:    Inner{Name: "in", Score: 2.5, Tags: []string{"a", "", "c"}},
			InnerPtr: &Inner{},
			Items:    []Inner{{Name: "first"}, {}, {Score: -1}},
			ByName:   map[string]Inner{"x": {Name: "x"}, "empty": {}},
			Grid:     [][]int{{1, 2}, {}, {3}},
			Fixed:    [3]int{0, -1, 2},
			Pair:     [2][2]string{{"a", "b"}, {"", "d"}},
			Digest:   [4]byte{0xde, 0xad, 0xbe, 0xef},
			EmptyMap: map[string]int{},
			NegZero:  math.Copysign(0, -1),
		},
		struct{}{},
	}
}

func mapValues() []any {
	return []any{
		map[string]string{"a": "1", "b": "", "ünï": "cödé"},
		map[int]string{-1: "minus one", 0: "zero", 1 << 40: "big"},
		map[string][]string{"k": {"v1", "v2"}, "empty": nil},
		map[bool]float64{true: 1.5, false: math.Inf(-1)},
		map[Point]string{{1, 2}: "p12", {}: "origin"},
		map[string]*Inner{"p": {Name: "pointed"}},
		map[string]int{},
		map[uint64]int64{math.MaxUint64: math.MinInt64},
	}
}

func sliceValues() []any {
	return []any{
		[]int{1, -1, 0, 1 << 60},
		[][]string{{"a"}, {}, {"b", "c"}},
		[][][]int{{{1}}, {{2, 3}, {}}},
		[]Inner{{Name: "a"}, {}},
		[3]string{"x", "", "z"},
		[2][3]int{{1, 2, 3}, {4, 5, 6}},
		[0]int{},
		[]float64{0, math.Copysign(0, -1), math.NaN()},
		[][]byte{{1}, {}, nil, {2, 3}},
		[]bool{true, false},
	}
}

func recursiveValues() []any {
	leaf := &Tree{Value: 3}
	return []any{
		Tree{Value: 1, Children: []*Tree{{Value: 2, Next: leaf}, leaf}, Next: &Tree{Value: 4}},
		Schema{Type: "object", Properties: map[string]Schema{
			"name": {Type: "string"},
			"list": {Type: "array", Items: &Schema{Type: "object", Properties: map[string]Schema{"x": {Type: "integer"}}}},
		}},
		map[string]*Tree{"t": {Value: 9}},
	}
}

func timeValues() []any {
	return []any{
		instant,
		time.Date(2026, 8, 17, 10, 0, 0, 123456789, fixedZone),
		Times{
			UTC:          instant,
			Fixed:        instant.In(fixedZone),
			SubMinute:    instant.In(subMinuteZone),
			NegSubMinute: instant.In(negSubMinute),
			Nanos:        time.Date(2024, 2, 29, 23, 59, 59, 999999999, time.UTC),
			Meta:         &MetaTime{instant},
			List:         []time.Time{instant, time.Unix(0, 1).UTC()},
		},
		Times{},
		[]time.Time{time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC)},
		Stamped{Label: "binary", At: Stamp{n: 0xc0ffee}},
		Stamped{Label: "zero stamp"},
	}
}

func rollout(name string, steps int) *Rollout {
	r := &Rollout{
		TypeMeta: TypeMeta{Kind: "Rollout", APIVersion: "argoproj.io/v1alpha1"},
		ObjectMeta: ObjectMeta{
			Name: name, Namespace: "vm", UID: "6f1c2d3e-0000-4000-8000-000000000001", ResourceVersion: "12345",
			Generation: 3, CreationTimestamp: MetaTime{instant},
			Labels:      map[string]string{"app": "vmzones"},
			Annotations: map[string]string{"vmzones.io/spec": "zones:\n  zone-a: {vmcluster: vm-a}\n"},
			OwnerReferences: []OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "owner", UID: "u",
				Controller: ptr(true)}},
		},
		Spec: RolloutSpec{
			Replicas: ptr(int32(1)),
			Template: PodTemplateSpec{
				ObjectMeta: ObjectMeta{Labels: map[string]string{"app": "vmzones"}},
				Spec: PodSpec{Containers: []Container{{
					Name: "pause", Image: "registry.k8s.io/pause:3.10",
					Args:  []string{"--flag"},
					Env:   []EnvVar{{Name: "A", Value: "1"}, {Name: "EMPTY"}},
					Ports: []ContainerPort{{Name: "http", ContainerPort: 8080, Protocol: "TCP"}},
					Resources: ResourceRequirements{
						Limits: map[string]Quantity{"cpu": {i: 100, Format: "DecimalSI"}},
					},
				}}},
			},
			ProgressDeadlineSeconds: ptr(int32(600)),
		},
		Status: RolloutStatus{CurrentStepIndex: ptr(int32(0)), Phase: "Progressing"},
	}
	canary := &CanaryStrategy{MaxSurge: &IntOrString{Type: 1, StrVal: "25%"}}
	for i := 0; i < steps; i++ {
		canary.Steps = append(canary.Steps, CanaryStep{Plugin: &PluginStep{
			Name: "vmzones/step", Config: json.RawMessage(fmt.Sprintf(`{"zone":"zone-%d","action":"apply"}`, i)),
		}}, CanaryStep{Pause: &Pause{Duration: &IntOrString{IntVal: 60}}})
	}
	r.Spec.Strategy.Canary = canary
	r.Status.StepPluginStatuses = []StepPluginStatus{{
		Index: 0, Name: "vmzones/step", Operation: "Run", Phase: "Running", StartedAt: &MetaTime{instant},
		UpdatedAt: &MetaTime{instant.Add(time.Second)}, Backoff: "30s", Executions: 2, Status: json.RawMessage(`{"n":1}`),
	}}
	return r
}

func runArgs(name string) *any {
	return anyPtr(RunArgs{
		Rollout: rollout(name, 2),
		Context: &RpcStepContext{PluginName: "vmzones/step", Config: json.RawMessage(`{"zone":"zone-a"}`)},
	})
}

func interfaceValues() []any {
	return []any{
		anyPtr(nil),
		runArgs("first"), // first send: definitions split across messages
		runArgs("second"),
		Envelope{Kind: "struct with interface", Payload: Inner{Name: "inside", Tags: []string{"t"}}, Tail: 7},
		anyPtr(Envelope{Kind: "nested", Payload: Point{X: 1, Y: -1}, Tail: 1}), // nested type definitions
		anyPtr(Envelope{Kind: "again", Payload: Point{X: 2}}),
		[]any{1, "two", nil, Inner{Name: "three"}, []string{"four"}},
		anyPtr(int64(-5)),
		anyPtr("plain string"),
	}
}

// realistic is the stream a step plugin sees on its broker stream: header/body pairs of several calls.
func realisticValues() []any {
	type Request struct {
		ServiceMethod string
		Seq           uint64
	}
	return []any{
		Request{ServiceMethod: "Plugin.InitPlugin"}, anyPtr(nil),
		Request{ServiceMethod: "Plugin.Run", Seq: 1}, runArgs("rollout-a"),
		Request{ServiceMethod: "Plugin.Run", Seq: 2}, runArgs("rollout-b"),
	}
}

func bigValues() []any {
	b := Big{Counts: map[string]int64{}}
	for i := 0; i < 20000; i++ {
		b.Names = append(b.Names, fmt.Sprintf("name-%06d-%s", i, strings.Repeat("x", i%17)))
	}
	b.Blob = make([]byte, 512*1024)
	for i := range b.Blob {
		b.Blob[i] = byte(i * 7)
	}
	for i := 0; i < 3000; i++ {
		b.Counts[fmt.Sprintf("k%d", i)] = int64(i) * 1_000_000_007
	}
	for i := 0; i < 3000; i++ {
		b.Rows = append(b.Rows, Inner{Name: fmt.Sprintf("row %d", i), Score: float64(i) / 3, Tags: []string{"a", "b"}})
	}
	return []any{b}
}

func vectorCases() []vectorCase {
	return []vectorCase{
		{"basics", basicsValues()},
		{"structs", structValues()},
		{"maps", mapValues()},
		{"slices", sliceValues()},
		{"recursive", recursiveValues()},
		{"times", timeValues()},
		{"interfaces", interfaceValues()},
		{"realistic", realisticValues()},
		{"big", bigValues()},
	}
}

// timeVectors: times whose MarshalBinary bytes and Go's reading of them are checked by the TS time codec.
func timeVectors() []time.Time {
	return []time.Time{
		instant,
		instant.In(fixedZone),
		instant.In(time.FixedZone("", -7*3600-30*60)),
		instant.In(subMinuteZone),
		instant.In(negSubMinute),
		instant.In(time.FixedZone("", 30)),
		instant.In(time.FixedZone("", -30)),
		instant.In(time.FixedZone("", 0)),
		time.Date(2024, 2, 29, 23, 59, 59, 999999999, time.UTC),
		time.Date(2024, 2, 29, 23, 59, 59, 120000000, time.UTC),
		time.Unix(0, 0).UTC(),
		time.Unix(-1, 999999999).UTC(),
		time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(0, 3, 1, 0, 0, 0, 0, time.UTC),
		time.Date(-1, 12, 31, 23, 59, 59, 0, time.UTC),
		time.Date(-10000, 1, 1, 0, 0, 0, 5, time.UTC),
		time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC),
		time.Date(10000, 1, 1, 0, 0, 0, 0, fixedZone),
		time.Date(123456, 6, 15, 12, 0, 0, 0, time.UTC),
		time.Date(1900, 2, 28, 12, 0, 0, 0, time.FixedZone("", 14*3600)),
		time.Date(2000, 2, 29, 0, 0, 0, 0, time.FixedZone("", -12*3600)),
		time.Date(2100, 3, 1, 0, 0, 0, 1000, time.UTC),
	}
}
