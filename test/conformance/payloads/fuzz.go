package payloads

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/argoproj/argo-rollouts/pkg/apis/rollouts/v1alpha1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/randfill"
)

// fuzzZones are the zones random times are put in. Negative sub-minute offsets are left out:
// Go's own time decoder mangles them (see ZoneNewYorkLMT), which a dedicated test covers.
var fuzzZones = []*time.Location{
	time.UTC, time.Local, zoneIndia, zoneAmsterdam, zoneNegative,
	time.FixedZone("MAX", 14*3600), time.FixedZone("MIN", -12*3600), time.FixedZone("ZERO", 0),
	time.FixedZone("SUBMIN", 59),
}

// NewFiller returns a seeded randfill.Filler for Argo Rollouts types with fill functions for the
// types whose random bytes would not be valid objects: times, raw JSON, IntOrString, Quantity.
// With jsSafeIntegers, 64-bit integers stay within ±(2^53-1), the range Kubernetes values
// (generations, durations, sizes) actually live in; without it they span the whole Go range.
func NewFiller(seed int64, jsSafeIntegers bool) *randfill.Filler {
	filler := newFiller(seed)
	if jsSafeIntegers {
		const limit = 1<<53 - 1
		filler.Funcs(
			func(i *int64, c randfill.Continue) { *i = c.Int63n(2*limit+1) - limit },
			func(i *int, c randfill.Continue) { *i = int(c.Int63n(2*limit+1) - limit) },
			func(i *uint64, c randfill.Continue) { *i = uint64(c.Int63n(limit + 1)) },
			func(d *time.Duration, c randfill.Continue) { *d = time.Duration(c.Int63n(2*limit+1) - limit) },
		)
	}
	return filler
}

func newFiller(seed int64) *randfill.Filler {
	return randfill.NewWithSeed(seed).NilChance(0.3).NumElements(0, 3).MaxDepth(14).Funcs(
		func(t *metav1.Time, c randfill.Continue) { *t = metav1.NewTime(randomTime(c)) },
		func(t *time.Time, c randfill.Continue) { *t = randomTime(c) },
		func(m *json.RawMessage, c randfill.Continue) {
			data, err := json.Marshal(randomObject(c, 3))
			if err != nil {
				panic(err)
			}
			*m = data
		},
		func(v *intstr.IntOrString, c randfill.Continue) {
			if c.Bool() {
				*v = intstr.FromInt32(c.Int31() - c.Int31())
			} else {
				*v = intstr.FromString(c.String(12))
			}
		},
		func(q *resource.Quantity, c randfill.Continue) {
			formats := []resource.Format{resource.DecimalSI, resource.BinarySI, resource.DecimalExponent}
			*q = *resource.NewMilliQuantity(c.Int63n(1<<40), formats[c.Intn(len(formats))])
		},
	)
}

func randomTime(c randfill.Continue) time.Time {
	var seconds int64
	switch c.Intn(10) {
	case 0: // far past and far future, including year 1 and year 9999
		seconds = -62135596800 + c.Int63n(253402300799+62135596800)
	default: // 1970..2100
		seconds = c.Int63n(4102444800)
	}
	return time.Unix(seconds, c.Int63n(1_000_000_000)).In(fuzzZones[c.Intn(len(fuzzZones))])
}

func randomObject(c randfill.Continue, depth int) map[string]any {
	out := map[string]any{}
	for range c.Intn(4) {
		out[c.String(8)] = randomJSONValue(c, depth-1)
	}
	return out
}

func randomJSONValue(c randfill.Continue, depth int) any {
	kinds := 6
	if depth > 0 {
		kinds = 8
	}
	switch c.Intn(kinds) {
	case 0:
		return c.String(16)
	case 1:
		return c.Int63() - c.Int63()
	case 2:
		return c.NormFloat64() * 1e6
	case 3:
		return c.Bool()
	case 4:
		return nil
	case 5:
		return fmt.Sprintf("%d", c.Int63())
	case 6:
		return randomObject(c, depth)
	default:
		list := make([]any, c.Intn(4))
		for i := range list {
			list[i] = randomJSONValue(c, depth-1)
		}
		return list
	}
}

// RandomRollout, RandomAnalysisRun, RandomMetric and RandomMeasurement fill fresh objects.
func RandomRollout(f *randfill.Filler) *v1alpha1.Rollout {
	var r v1alpha1.Rollout
	f.Fill(&r)
	return &r
}

func RandomAnalysisRun(f *randfill.Filler) *v1alpha1.AnalysisRun {
	var r v1alpha1.AnalysisRun
	f.Fill(&r)
	return &r
}

func RandomMetric(f *randfill.Filler) v1alpha1.Metric {
	var m v1alpha1.Metric
	f.Fill(&m)
	return m
}

func RandomMeasurement(f *randfill.Filler) v1alpha1.Measurement {
	var m v1alpha1.Measurement
	f.Fill(&m)
	return m
}
