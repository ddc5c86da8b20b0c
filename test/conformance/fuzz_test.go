package conformance_test

import (
	"bytes"
	"encoding/gob"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	metricrpc "github.com/argoproj/argo-rollouts/metricproviders/plugin/rpc"
	steprpc "github.com/argoproj/argo-rollouts/rollout/steps/plugin/rpc"
	"github.com/argoproj/argo-rollouts/utils/plugin/types"
	"sigs.k8s.io/randfill"

	"vmzones/test/conformance/gobjson"
	"vmzones/test/conformance/payloads"
)

const defaultFuzzCount = 300

func fuzzSettings(t *testing.T) (count int, seed int64) {
	t.Helper()
	count, seed = defaultFuzzCount, 20260817
	if v := os.Getenv("CONFORMANCE_FUZZ_COUNT"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("CONFORMANCE_FUZZ_COUNT=%q: want a positive integer", v)
		}
		count = n
	}
	if v := os.Getenv("CONFORMANCE_FUZZ_SEED"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			t.Fatalf("CONFORMANCE_FUZZ_SEED=%q: want an integer", v)
		}
		seed = n
	}
	return count, seed
}

// gobEncodable reports whether Go's gob can encode v at all (random values can hold nil
// pointers inside slices or maps, which gob refuses before anything reaches the wire).
func gobEncodable(v any) bool {
	var args any = v
	return gob.NewEncoder(&bytes.Buffer{}).Encode(&args) == nil
}

// TestDifferentialFuzz sends random Rollouts, AnalysisRuns, Metrics and Measurements through the
// controller's RPC clients and compares the fixture's raw echo (what TS decoded) with the Go value.
// Two integer ranges run as separate subtests: Kubernetes-realistic (|v| ≤ 2^53-1, which JS numbers
// hold exactly) and Go's full range (big int64s must survive as exact decimal strings).
func TestDifferentialFuzz(t *testing.T) {
	count, seed := fuzzSettings(t)
	t.Logf("differential fuzz: %d iterations per integer range, seed %d (CONFORMANCE_FUZZ_COUNT / CONFORMANCE_FUZZ_SEED)", count, seed)
	for _, c := range []struct {
		name     string
		safeInts bool
	}{{"JSSafeIntegers", true}, {"FullRangeIntegers", false}} {
		t.Run(c.name, func(t *testing.T) {
			// Each range has its own plugin processes and sessions: on two cores both run at once.
			t.Parallel()
			fuzzOnce(t, count, seed, c.safeInts)
		})
	}
}

// fuzzFailureLimit stops a kind of comparison after this many failing iterations (the first
// ones say everything; hundreds of identical diffs say nothing).
const fuzzFailureLimit = 5

// fuzzChunk iterations share one pair of plugin processes. A bigger count runs in chunks, each a subtest with
// fresh processes, so that no session outlives the harness watchdog (sessionWatchdog): 1,000 iterations took
// over 3 minutes on a 2-core machine shared with other builds (load average ~20), 250 stay well under it.
const fuzzChunk = 250

type fuzzTally struct {
	stepRuns, metricRuns, skipped, stepFailures, metricFailures int
}

func fuzzOnce(t *testing.T, count int, seed int64, safeInts bool) {
	filler := payloads.NewFiller(seed, safeInts)
	var f fuzzTally
	if count <= fuzzChunk {
		fuzzRange(t, filler, 0, count, &f)
	} else {
		for from := 0; from < count; from += fuzzChunk {
			to := min(from+fuzzChunk, count)
			t.Run(fmt.Sprintf("iterations%d-%d", from, to-1), func(t *testing.T) { fuzzRange(t, filler, from, to, &f) })
		}
	}
	t.Logf("ran %d step Run and %d metric Resume comparisons; %d random values gob itself refuses were skipped", f.stepRuns, f.metricRuns, f.skipped)
	if f.stepFailures >= fuzzFailureLimit || f.metricFailures >= fuzzFailureLimit {
		t.Errorf("stopped comparing after %d failing iterations (step %d, metric %d)", fuzzFailureLimit, f.stepFailures, f.metricFailures)
	}
	if f.skipped > count/2 {
		t.Errorf("%d of %d random values were not gob-encodable: the filler needs fixing", f.skipped, 2*count)
	}
}

func fuzzRange(t *testing.T, filler *randfill.Filler, from, to int, f *fuzzTally) {
	stepSess, step := stepSession(t, fixtureTarget(t))
	metricSess, metric := metricSession(t, fixtureTarget(t))
	rawConfig := json.RawMessage(`{"echo":"raw"}`)
	for i := from; i < to; i++ {
		rollout := payloads.RandomRollout(filler)
		var status json.RawMessage
		filler.Fill(&status)
		context := &types.RpcStepContext{PluginName: "fuzz/" + strconv.Itoa(i), Config: rawConfig, Status: status}
		stepArgs := steprpc.RunArgs{Rollout: rollout, Context: context}
		switch {
		case !gobEncodable(stepArgs):
			f.skipped++
		case f.stepFailures < fuzzFailureLimit:
			f.stepRuns++
			ping(t, stepSess)
			result, rpcErr := step.Run(rollout, context)
			if rpcErr.HasError() {
				f.stepFailures++
				t.Errorf("iteration %d: step Run returned RpcError %q", i, rpcErr.ErrorString)
			} else if !sameRaw(t, i, "step Run", gobjson.Interface("step.RunArgs", stepArgs), result.Status) {
				f.stepFailures++
			}
		}

		run := payloads.RandomAnalysisRun(filler)
		m := payloads.RandomMetric(filler)
		m.Provider.Plugin = map[string]json.RawMessage{fixtureMetricName: rawConfig}
		measurement := payloads.RandomMeasurement(filler)
		metricArgs := metricrpc.TerminateAndResumeArgs{AnalysisRun: run, Metric: m, Measurement: measurement}
		switch {
		case !gobEncodable(metricArgs):
			f.skipped++
		case f.metricFailures < fuzzFailureLimit:
			f.metricRuns++
			ping(t, metricSess)
			got := metric.Resume(run, m, measurement)
			if got.Phase != "Successful" {
				f.metricFailures++
				t.Errorf("iteration %d: metric Resume returned {%q %q}", i, got.Phase, got.Message)
			} else if !sameRaw(t, i, "metric Resume", gobjson.Interface("TerminateAndResumeArgs", metricArgs), []byte(`{"raw":`+got.Value+`}`)) {
				f.metricFailures++
			}
		}
	}
}

func sameRaw(t *testing.T, iteration int, what string, want any, document []byte) bool {
	t.Helper()
	diffs, err := gobjson.Compare(want, echoed(t, document, "raw"), 12)
	if err != nil {
		t.Errorf("iteration %d %s: %v", iteration, what, err)
		return false
	}
	if len(diffs) > 0 {
		t.Errorf("iteration %d %s: raw echo differs from Go's value:\n  %s", iteration, what, strings.Join(diffs, "\n  "))
		return false
	}
	return true
}
