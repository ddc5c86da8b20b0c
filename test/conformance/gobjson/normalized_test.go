package gobjson_test

import (
	"encoding/json"
	"math"
	"reflect"
	"testing"
	"time"

	metricrpc "github.com/argoproj/argo-rollouts/metricproviders/plugin/rpc"
	"github.com/argoproj/argo-rollouts/pkg/apis/rollouts/v1alpha1"
	steprpc "github.com/argoproj/argo-rollouts/rollout/steps/plugin/rpc"
	"github.com/argoproj/argo-rollouts/utils/plugin/types"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"vmzones/test/conformance/gobjson"
	"vmzones/test/conformance/payloads"
)

func threePasses(t *testing.T, name string, v any) any {
	t.Helper()
	generic, err := gobjson.ToGeneric(gobjson.Interface(name, v))
	if err != nil {
		t.Fatal(err)
	}
	return gobjson.Normalize(generic)
}

func assertSameAsThreePasses(t *testing.T, what, name string, v any) {
	t.Helper()
	want := threePasses(t, name, v)
	if got := gobjson.NormalizedInterface(name, v); !reflect.DeepEqual(got, want) {
		t.Fatalf("%s: NormalizedInterface differs from Normalize(ToGeneric(Interface)):\n  %s", what, gobjson.Diff(want, got, 12))
	}
}

// The fuzz's own arguments, both integer ranges, many seeds' worth of random values.
func TestNormalizedEqualsTheThreePasses(t *testing.T) {
	gobjson.RegisterName("step.RunArgs", steprpc.RunArgs{})
	gobjson.RegisterName("TerminateAndResumeArgs", metricrpc.TerminateAndResumeArgs{})
	for _, safe := range []bool{true, false} {
		filler := payloads.NewFiller(7, safe)
		for range 100 {
			var status json.RawMessage
			filler.Fill(&status)
			context := &types.RpcStepContext{PluginName: "p", Config: status, Status: status}
			assertSameAsThreePasses(t, "step args", "step.RunArgs", steprpc.RunArgs{Rollout: payloads.RandomRollout(filler), Context: context})
			metric := metricrpc.TerminateAndResumeArgs{
				AnalysisRun: payloads.RandomAnalysisRun(filler), Metric: payloads.RandomMetric(filler), Measurement: payloads.RandomMeasurement(filler),
			}
			assertSameAsThreePasses(t, "metric args", "TerminateAndResumeArgs", metric)
		}
	}
}

// The cases random Argo objects rarely or never hold.
func TestNormalizedHandlesTheOddCases(t *testing.T) {
	type odd struct {
		Invalid     string
		Keys        map[string]string
		TimeKey     map[string]string
		Floats      []float64
		Small       float32
		Big         uint64
		Huge        int64
		Empty       []byte
		Bytes       []byte
		Array       [3]uint8
		Iface       any
		NilPtr      *v1alpha1.Rollout
		Zero        metav1.Time
		When        *metav1.Time
		Quantity    resource.Quantity
		IntKeys     map[int64]bool
		AllEmpty    map[string]any
		EmptyList   []string
		NilElements []*string
	}
	gobjson.RegisterName("odd", odd{})
	gobjson.RegisterName("int", 0)
	gobjson.RegisterName("float64", 0.0)
	empty := ""
	value := odd{
		Invalid:     "a\xffb\xe2\x82",
		Keys:        map[string]string{"ok": "x", "bad\xff": "y", "bad\xfe": "z"},
		TimeKey:     map[string]string{"$time": "2020-01-01T01:00:00.500+01:00", "other": ""},
		Floats:      []float64{0, math.Copysign(0, -1), 1e21, 1e-7, math.NaN(), math.Inf(1), math.Inf(-1), 123.25},
		Small:       0.1,
		Big:         math.MaxUint64,
		Huge:        math.MinInt64,
		Empty:       []byte{},
		Bytes:       []byte{0, 1, 2},
		Array:       [3]uint8{0, 0, 7},
		Iface:       odd{Huge: 1},
		Zero:        metav1.Time{},
		When:        &metav1.Time{Time: time.Unix(1, 5).In(time.FixedZone("X", -3600))},
		Quantity:    resource.MustParse("1500m"),
		IntKeys:     map[int64]bool{-1: true, 2: false},
		AllEmpty:    map[string]any{"a": nil, "b": 0, "c": 0.5},
		EmptyList:   []string{},
		NilElements: []*string{nil, &empty},
	}
	assertSameAsThreePasses(t, "odd values", "odd", value)
	assertSameAsThreePasses(t, "zero value", "odd", odd{})
	assertSameAsThreePasses(t, "nil", "odd", nil)
}
