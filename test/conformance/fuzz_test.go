package conformance_test

import (
	"encoding/gob"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"reflect"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metricrpc "github.com/argoproj/argo-rollouts/metricproviders/plugin/rpc"
	steprpc "github.com/argoproj/argo-rollouts/rollout/steps/plugin/rpc"
	"github.com/argoproj/argo-rollouts/utils/plugin/types"
	"sigs.k8s.io/randfill"

	"vmzones/test/conformance/gobjson"
	"vmzones/test/conformance/launch"
	"vmzones/test/conformance/payloads"
)

const defaultFuzzCount = 500

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

// TestDifferentialFuzz sends random Rollouts, AnalysisRuns, Metrics and Measurements through the
// controller's RPC clients and compares the fixture's raw echo (what TS decoded) with the Go value.
// Two integer ranges run as separate subtests: Kubernetes-realistic (|v| ≤ 2^53-1, which JS numbers
// hold exactly) and Go's full range (big int64s must survive as exact decimal strings).
func TestDifferentialFuzz(t *testing.T) {
	count, seed := fuzzSettings(t)
	t.Logf("differential fuzz: %d iterations per integer range, seed %d (CONFORMANCE_FUZZ_COUNT / CONFORMANCE_FUZZ_SEED)", count, seed)
	// The fuzz allocates many short-lived trees over a small live heap: fewer GC cycles (GC was ~8% of
	// the harness's CPU at the default 100) for memory the machine has. Restored when both ranges end.
	previous := debug.SetGCPercent(400)
	var compared atomic.Int64
	began := time.Now()
	t.Cleanup(func() {
		debug.SetGCPercent(previous)
		elapsed := time.Since(began)
		t.Logf("differential fuzz: %d comparisons in %.1f s wall (%.2f ms per comparison, both ranges at once)",
			compared.Load(), elapsed.Seconds(), float64(elapsed.Microseconds())/1000/float64(max(compared.Load(), 1)))
	})
	for _, c := range []struct {
		name     string
		safeInts bool
	}{{"JSSafeIntegers", true}, {"FullRangeIntegers", false}} {
		t.Run(c.name, func(t *testing.T) {
			// Each range has its own plugin processes and sessions: on two cores both run at once.
			t.Parallel()
			compared.Add(int64(fuzzOnce(t, count, seed, c.safeInts)))
		})
	}
}

// fuzzFailureLimit stops a kind of comparison after this many failing iterations (the first
// ones say everything; hundreds of identical diffs say nothing).
const fuzzFailureLimit = 5

// fuzzChunk iterations share one pair of plugin processes; a bigger count runs in chunks, each a subtest with
// fresh processes (a progress line every chunk, and no process's history grows without bound). The watchdog
// counts from the last answered Ping (sessionWatchdog), so a chunk's length is not bounded by it.
const fuzzChunk = 2500

// fuzzStream is one kind of comparison (step Run, metric Resume) in one integer range: its own random
// source, so that both kinds run concurrently and each stays reproducible from the seed.
type fuzzStream struct {
	what     string
	filler   *randfill.Filler
	gobCheck *gob.Encoder
	runs     int
	skipped  int
	failures int
}

func newFuzzStream(what string, seed int64, safeInts bool) *fuzzStream {
	return &fuzzStream{what: what, filler: payloads.NewFiller(seed, safeInts), gobCheck: gob.NewEncoder(io.Discard)}
}

// encodable reports whether Go's gob can encode v at all (random values can hold nil pointers inside
// slices or maps, which gob refuses before anything reaches the wire; net/rpc would then close the
// connection). One encoder per stream: it sends the big type descriptors once, as net/rpc's does.
func (s *fuzzStream) encodable(v any) bool {
	var args any = v
	return s.gobCheck.Encode(&args) == nil
}

// ready counts iteration i and pings the plugin as the controller does before each call. False: skip
// the iteration (gob refuses the value), or stop the stream (the plugin did not answer: s.done).
func (s *fuzzStream) ready(t *testing.T, i int, session *launch.Session, args any) bool {
	t.Helper()
	if !s.encodable(args) {
		s.skipped++
		return false
	}
	s.runs++
	if err := pingSession(session); err != nil {
		s.fail(t, i, "%v", err)
		s.failures = fuzzFailureLimit
		return false
	}
	return true
}

// done reports whether the stream stopped comparing (too many failures).
func (s *fuzzStream) done() bool { return s.failures >= fuzzFailureLimit }

// fail records a failing iteration.
func (s *fuzzStream) fail(t *testing.T, iteration int, format string, args ...any) {
	t.Helper()
	s.failures++
	t.Errorf("iteration %d %s: %s", iteration, s.what, fmt.Sprintf(format, args...))
}

// fuzzOnce runs one integer range and returns how many comparisons it made.
func fuzzOnce(t *testing.T, count int, seed int64, safeInts bool) int {
	step := newFuzzStream("step Run", seed, safeInts)
	metric := newFuzzStream("metric Resume", seed+1, safeInts)
	began := time.Now()
	if count <= fuzzChunk {
		fuzzRange(t, step, metric, 0, count)
	} else {
		for from := 0; from < count; from += fuzzChunk {
			to := min(from+fuzzChunk, count)
			t.Run(fmt.Sprintf("iterations%d-%d", from, to-1), func(t *testing.T) { fuzzRange(t, step, metric, from, to) })
		}
	}
	elapsed := time.Since(began)
	compared := step.runs + metric.runs
	t.Logf("ran %d step Run and %d metric Resume comparisons in %.1f s; %d random values gob itself refuses were skipped",
		step.runs, metric.runs, elapsed.Seconds(), step.skipped+metric.skipped)
	if step.done() || metric.done() {
		t.Errorf("stopped comparing after %d failing iterations (step %d, metric %d)", fuzzFailureLimit, step.failures, metric.failures)
	}
	if skipped := step.skipped + metric.skipped; skipped > count/2 {
		t.Errorf("%d of %d random values were not gob-encodable: the filler needs fixing", skipped, 2*count)
	}
	return compared
}

// fuzzRange runs iterations [from, to) of both streams, each on its own plugin process, concurrently.
func fuzzRange(t *testing.T, step, metric *fuzzStream, from, to int) {
	stepSess, stepClient := stepSession(t, fixtureTarget(t))
	metricSess, metricClient := metricSession(t, fixtureTarget(t))
	var wg sync.WaitGroup
	wg.Go(func() { step.steps(t, stepSess, stepClient, from, to) })
	wg.Go(func() { metric.metrics(t, metricSess, metricClient, from, to) })
	wg.Wait()
}

var rawEchoConfig = json.RawMessage(`{"echo":"raw"}`)

func (s *fuzzStream) steps(t *testing.T, session *launch.Session, client *steprpc.StepPluginRPC, from, to int) {
	for i := from; i < to && !s.done(); i++ {
		rollout := payloads.RandomRollout(s.filler)
		var status json.RawMessage
		s.filler.Fill(&status)
		context := &types.RpcStepContext{PluginName: "fuzz/" + strconv.Itoa(i), Config: rawEchoConfig, Status: status}
		args := steprpc.RunArgs{Rollout: rollout, Context: context}
		if !s.ready(t, i, session, args) {
			continue
		}
		result, rpcErr := client.Run(rollout, context)
		if rpcErr.HasError() {
			s.fail(t, i, "returned RpcError %q", rpcErr.ErrorString)
			continue
		}
		document, err := s.parse(result.Status)
		if err != nil {
			s.fail(t, i, "status: %v (first bytes: %q)", err, tail(string(result.Status), 300))
			continue
		}
		envelope, ok := document.(map[string]any)
		if !ok || envelope["raw"] == nil {
			s.fail(t, i, "status has no \"raw\" echo (first bytes: %q)", tail(string(result.Status), 300))
			continue
		}
		s.compare(t, i, "step.RunArgs", args, envelope["raw"])
	}
}

func (s *fuzzStream) metrics(t *testing.T, session *launch.Session, client *metricrpc.MetricsPluginRPC, from, to int) {
	for i := from; i < to && !s.done(); i++ {
		run := payloads.RandomAnalysisRun(s.filler)
		m := payloads.RandomMetric(s.filler)
		m.Provider.Plugin = map[string]json.RawMessage{fixtureMetricName: rawEchoConfig}
		measurement := payloads.RandomMeasurement(s.filler)
		args := metricrpc.TerminateAndResumeArgs{AnalysisRun: run, Metric: m, Measurement: measurement}
		if !s.ready(t, i, session, args) {
			continue
		}
		got := client.Resume(run, m, measurement)
		if got.Phase != "Successful" {
			s.fail(t, i, "returned {%q %q}", got.Phase, got.Message)
			continue
		}
		echo, err := s.parse([]byte(got.Value))
		if err != nil {
			s.fail(t, i, "value: %v (first bytes: %q)", err, tail(got.Value, 300))
			continue
		}
		s.compare(t, i, "TerminateAndResumeArgs", args, echo)
	}
}

// crossCheckEvery: every so many comparisons also take the harness's reference paths (Canonical,
// ToGeneric, Normalize for Go's value; encoding/json and Normalize for the echo) and require the
// one-pass trees to equal theirs, so that the fast paths cannot drift from what they stand for.
const crossCheckEvery = 50

func (s *fuzzStream) crossCheck() bool { return s.runs%crossCheckEvery == 0 }

// parse is the echo's normalized tree (gobjson.ParseNormalized).
func (s *fuzzStream) parse(data []byte) (any, error) {
	tree, err := gobjson.ParseNormalized(data)
	if err != nil {
		return nil, fmt.Errorf("not JSON: %w", err)
	}
	if s.crossCheck() {
		reference, err := gobjson.ParseJSON(data)
		if err != nil {
			return nil, fmt.Errorf("the one-pass parser took what encoding/json refuses: %w", err)
		}
		if reference = gobjson.Normalize(reference); !reflect.DeepEqual(tree, reference) {
			return nil, fmt.Errorf("the one-pass parser's tree differs from encoding/json's:\n  %s", strings.Join(gobjson.Diff(reference, tree, 12), "\n  "))
		}
	}
	return tree, nil
}

func (s *fuzzStream) compare(t *testing.T, iteration int, name string, args, echo any) {
	t.Helper()
	if s.crossCheck() {
		reference, err := gobjson.ToGeneric(gobjson.Interface(name, args))
		if err != nil {
			s.fail(t, iteration, "%v", err)
			return
		}
		if direct := gobjson.NormalizedInterface(name, args); !reflect.DeepEqual(direct, gobjson.Normalize(reference)) {
			s.fail(t, iteration, "the harness's one-walk expected tree differs from the three-pass one:\n  %s",
				strings.Join(gobjson.Diff(gobjson.Normalize(reference), direct, 12), "\n  "))
			return
		}
	}
	if diffs := gobjson.CompareInterface(name, args, echo, 12); len(diffs) > 0 {
		s.fail(t, iteration, "raw echo differs from Go's value:\n  %s", strings.Join(diffs, "\n  "))
	}
}
