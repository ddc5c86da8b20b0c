package conformance_test

import (
	"bytes"
	"encoding/gob"
	"encoding/json"
	"os"
	"strconv"
	"testing"

	metricrpc "github.com/argoproj/argo-rollouts/metricproviders/plugin/rpc"
	steprpc "github.com/argoproj/argo-rollouts/rollout/steps/plugin/rpc"
	"github.com/argoproj/argo-rollouts/utils/plugin/types"

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
func TestDifferentialFuzz(t *testing.T) {
	count, seed := fuzzSettings(t)
	t.Logf("differential fuzz: %d iterations per kind, seed %d (CONFORMANCE_FUZZ_COUNT / CONFORMANCE_FUZZ_SEED)", count, seed)
	filler := payloads.NewFiller(seed)
	stepSess, step := stepSession(t, fixtureTarget(t))
	metricSess, metric := metricSession(t, fixtureTarget(t))
	rawConfig := json.RawMessage(`{"echo":"raw"}`)

	var stepRuns, metricRuns, skipped, failures int
	for i := range count {
		if failures >= 5 {
			t.Fatalf("stopping after %d failing iterations (of %d run)", failures, i)
		}
		rollout := payloads.RandomRollout(filler)
		var status json.RawMessage
		filler.Fill(&status)
		context := &types.RpcStepContext{PluginName: "fuzz/" + strconv.Itoa(i), Config: rawConfig, Status: status}
		stepArgs := steprpc.RunArgs{Rollout: rollout, Context: context}
		if gobEncodable(stepArgs) {
			stepRuns++
			ping(t, stepSess)
			result, rpcErr := step.Run(rollout, context)
			if rpcErr.HasError() {
				failures++
				t.Errorf("iteration %d: Run returned RpcError %q", i, rpcErr.ErrorString)
			} else if !sameRaw(t, i, "step Run", gobjson.Interface("step.RunArgs", stepArgs), result.Status, true) {
				failures++
			}
		} else {
			skipped++
		}

		run := payloads.RandomAnalysisRun(filler)
		m := payloads.RandomMetric(filler)
		m.Provider.Plugin = map[string]json.RawMessage{fixtureMetricName: rawConfig}
		measurement := payloads.RandomMeasurement(filler)
		metricArgs := metricrpc.TerminateAndResumeArgs{AnalysisRun: run, Metric: m, Measurement: measurement}
		if gobEncodable(metricArgs) {
			metricRuns++
			ping(t, metricSess)
			got := metric.Resume(run, m, measurement)
			if got.Phase != "Successful" {
				failures++
				t.Errorf("iteration %d: Resume returned {%q %q}", i, got.Phase, got.Message)
			} else if !sameRaw(t, i, "metric Resume", gobjson.Interface("TerminateAndResumeArgs", metricArgs), []byte(`{"raw":`+got.Value+`}`), false) {
				failures++
			}
		} else {
			skipped++
		}
	}
	t.Logf("differential fuzz ran %d step Run and %d metric Resume comparisons (%d random values gob itself refuses were skipped)", stepRuns, metricRuns, skipped)
	if stepRuns < count/2 || metricRuns < count/2 {
		t.Errorf("too few comparisons ran (%d step, %d metric of %d): the random values are mostly not gob-encodable", stepRuns, metricRuns, count)
	}
}

func sameRaw(t *testing.T, iteration int, what string, want any, document []byte, _ bool) bool {
	t.Helper()
	diffs, err := gobjson.Compare(want, echoed(t, document, "raw"), 12)
	if err != nil {
		t.Errorf("iteration %d %s: %v", iteration, what, err)
		return false
	}
	if len(diffs) > 0 {
		t.Errorf("iteration %d %s: raw echo differs from Go's value:\n  %s", iteration, what, joinLines(diffs))
		return false
	}
	return true
}

func joinLines(lines []string) string {
	var b bytes.Buffer
	for i, l := range lines {
		if i > 0 {
			b.WriteString("\n  ")
		}
		b.WriteString(l)
	}
	return b.String()
}
