// Command bench drives, side by side and through the Argo Rollouts controller's own client code,
// (a) the TS fixture step plugin and (b) Argo Rollouts' Go step-plugin-sample, with the same
// realistic Rollout, and prints Run latency, throughput, startup time and peak RSS for both.
//
// Fairness notes: both plugins get the same Rollout (printed: its gob size) and the same
// RpcStepContext (config {} and no status). With that input step-plugin-sample's Run decodes the
// Rollout, unmarshals config, mints a uuid, draws a random number under a mutex and stores it in a
// map, and returns Successful with a small JSON status; the TS fixture (step-plugin-e2e semantics)
// decodes the Rollout, builds its typed view, mints a uuid and returns Successful with {Data, Count}.
// The sample also writes one logrus line per Run to stderr ("Set 'N' for id …"), which go-plugin
// relays through the host's logger; the TS fixture logs nothing per call. That costs the Go side a
// few microseconds per call.
// Per-call work outside the transport is thus tiny on both sides, and the numbers compare the
// transports (yamux + net/rpc + gob) and runtimes. Both are launched by exec, like the controller
// does: Go's binary directly, the TS bundle as `<node> <bundle.mjs>`. Iteration counts are fixed.
// About a third of the realistic Rollout's bytes sit in a few large strings (the kubectl
// last-applied-configuration annotation, managedFields), which any decoder copies cheaply, so a
// second, field-heavy Rollout (also ≥ 64 KiB) is timed too; the ratios use the realistic one.
package main

import (
	"bytes"
	"encoding/gob"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/argoproj/argo-rollouts/pkg/apis/rollouts/v1alpha1"
	steprpc "github.com/argoproj/argo-rollouts/rollout/steps/plugin/rpc"
	"github.com/argoproj/argo-rollouts/utils/plugin/types"
	goPlugin "github.com/hashicorp/go-plugin"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"vmzones/test/conformance/launch"
	"vmzones/test/conformance/payloads"
)

type result struct {
	name     string
	p50, p99 time.Duration
	// Latency with the field-heavy Rollout (many small fields instead of a few large strings).
	denseP50, denseP99 time.Duration
	callsPerS          float64
	startup            time.Duration
	peakRSSKiB         int64
}

func main() {
	node := flag.String("node", "", "node 24 binary")
	bundle := flag.String("bundle", "", "dist/fixture-plugin.mjs")
	nodeFlags := flag.String("node-flags", "", "space-separated Node flags placed before the bundle, as the ConfigMap's args would")
	sample := flag.String("sample", "", "step-plugin-sample binary")
	sequential := flag.Int("calls", 2000, "sequential Run calls for the latency percentiles")
	concurrent := flag.Int("concurrent-calls", 4000, "Run calls spread over the concurrent callers")
	callers := flag.Int("callers", 16, "concurrent callers for the throughput figure")
	launches := flag.Int("launches", 7, "launches for the startup median")
	only := flag.String("only", "", "measure only this target (ts-fixture or go-sample), for experiments; no ratios")
	dump := flag.String("dump-gob", "", "write the Run request gob streams (realistic.gob, field-heavy.gob: two calls each) into this folder and exit")
	flag.Parse()
	if *node == "" || *bundle == "" || *sample == "" {
		fmt.Fprintln(os.Stderr, "bench: -node, -bundle and -sample are required")
		os.Exit(2)
	}

	context := &types.RpcStepContext{PluginName: "vmzones/bench", Config: json.RawMessage(`{}`)}
	rollout, dense := benchRollout(), denseRollout()
	for _, r := range []struct {
		name    string
		rollout *v1alpha1.Rollout
	}{{"realistic", rollout}, {"field-heavy", dense}} {
		first, steady := gobSizes(r.rollout, context)
		fmt.Printf("%s rollout: %d steps, %d containers, %d step plugin statuses; Plugin.Run request gob: %d bytes on the first call (with type definitions), %d bytes per later call\n",
			r.name, len(r.rollout.Spec.Strategy.Canary.Steps), len(r.rollout.Spec.Template.Spec.Containers),
			len(r.rollout.Status.Canary.StepPluginStatuses), first, steady)
		if steady < 64*1024 {
			fmt.Fprintf(os.Stderr, "bench: the %s Rollout is only %d bytes of gob, want ≥ 64 KiB\n", r.name, steady)
			os.Exit(1)
		}
	}

	if *dump != "" {
		for name, r := range map[string]*v1alpha1.Rollout{"realistic": rollout, "field-heavy": dense} {
			if err := os.WriteFile(*dump+"/"+name+".gob", gobStream(r, context), 0o644); err != nil {
				fmt.Fprintln(os.Stderr, "bench:", err)
				os.Exit(1)
			}
		}
		return
	}

	targets := []launch.Target{
		// FIXTURE_IGNORE_UNREAD: decode the request like vmzones does (the fields its views never read are walked, not built).
		{Name: "ts-fixture", Argv: append(append([]string{*node}, strings.Fields(*nodeFlags)...), *bundle), Env: []string{"FIXTURE_IGNORE_UNREAD=1"}},
		{Name: "go-sample", Argv: []string{*sample}},
	}
	results := make([]result, 0, len(targets))
	for _, target := range targets {
		if *only != "" && target.Name != *only {
			continue
		}
		r, err := measure(target, rollout, dense, context, *sequential, *concurrent, *callers, *launches)
		if err != nil {
			fmt.Fprintf(os.Stderr, "bench: %s: %v\n", target.Name, err)
			os.Exit(1)
		}
		fmt.Printf("%-10s Run p50 %8.3f ms   p99 %8.3f ms   %8.0f calls/s @%d callers   exec→handshake %7.1f ms (median of %d)   peak RSS %7.1f MiB\n",
			r.name, ms(r.p50), ms(r.p99), r.callsPerS, *callers, ms(r.startup), *launches, float64(r.peakRSSKiB)/1024)
		fmt.Printf("%-10s field-heavy Rollout: Run p50 %8.3f ms   p99 %8.3f ms\n", r.name, ms(r.denseP50), ms(r.denseP99))
		results = append(results, r)
	}
	goPlugin.CleanupClients()
	if *only != "" {
		return
	}
	ts, gor := results[0], results[1]
	fmt.Printf("run_p50_ratio_ts_over_go %.2f\n", float64(ts.p50)/float64(gor.p50))
	fmt.Printf("field_heavy_run_p50_ratio_ts_over_go %.2f\n", float64(ts.denseP50)/float64(gor.denseP50))
	fmt.Printf("startup_ratio_ts_over_go %.2f\n", float64(ts.startup)/float64(gor.startup))
	fmt.Printf("rss_ratio_ts_over_go %.2f\n", float64(ts.peakRSSKiB)/float64(gor.peakRSSKiB))
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// benchRollout is the conformance suite's realistic Rollout grown the way objects in real clusters
// are: four containers, a 24-zone vmzones.io/spec document, the kubectl last-applied-configuration
// annotation and managedFields of three field managers. One Plugin.Run request is then above 64 KiB
// of gob.
func benchRollout() *v1alpha1.Rollout {
	r := payloads.Rollout("vmzones/bench")
	base := r.Spec.Template.Spec.Containers[0]
	containers := make([]corev1.Container, 0, 4)
	for i := range 4 {
		c := *base.DeepCopy()
		c.Name = fmt.Sprintf("vmstorage-%d", i)
		containers = append(containers, c)
	}
	r.Spec.Template.Spec.Containers = containers
	var spec strings.Builder
	spec.WriteString("overrideSpec:\n  clusterVersion: v1.118.0-cluster\nzones:\n")
	for i := range 24 {
		fmt.Fprintf(&spec, "  zone-%02d:\n    vmcluster: vm-zone-%02d\n    overrideSpec: {vmstorage: {replicaCount: %d, resources: {limits: {memory: 16Gi}}}}\n", i, i, 3+i%3)
	}
	r.Spec.Template.Annotations["vmzones.io/spec"] = spec.String()
	applied, err := json.Marshal(r)
	if err != nil {
		panic(err)
	}
	r.Annotations["kubectl.kubernetes.io/last-applied-configuration"] = string(applied)
	fields, err := json.Marshal(map[string]any{"f:spec": r.Spec, "f:metadata": r.ObjectMeta.Labels})
	if err != nil {
		panic(err)
	}
	for _, manager := range []string{"argocd-controller", "rollouts-controller", "kubectl-client-side-apply"} {
		r.ManagedFields = append(r.ManagedFields, metav1.ManagedFieldsEntry{
			Manager: manager, Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "argoproj.io/v1alpha1",
			Time: payloads.Time(1760000000, 0, time.UTC), FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: fields},
		})
	}
	return r
}

// denseRollout reaches 64 KiB of gob through many small fields instead of a few large strings:
// 24 containers and 8 init containers with their env, probes and resources, and 60 step plugin
// statuses (20 steps run three times each: a retried rollout) with times and JSON status documents.
// It is a stress shape for the decoder, not a typical object.
func denseRollout() *v1alpha1.Rollout {
	r := payloads.Rollout("vmzones/bench")
	base := r.Spec.Template.Spec.Containers[0]
	containers := make([]corev1.Container, 0, 32)
	for i := range 32 {
		c := *base.DeepCopy()
		c.Name = fmt.Sprintf("vmstorage-%d", i)
		for j := range 20 {
			c.Env = append(c.Env, corev1.EnvVar{Name: fmt.Sprintf("VM_FLAG_%d", j), Value: fmt.Sprintf("-search.maxQueryLen=%d", 16384+j)})
		}
		containers = append(containers, c)
	}
	r.Spec.Template.Spec.Containers = containers[:24]
	r.Spec.Template.Spec.InitContainers = containers[24:]
	statuses := make([]v1alpha1.StepPluginStatus, 0, 60)
	for attempt := range 3 {
		for step := range 20 {
			statuses = append(statuses, v1alpha1.StepPluginStatus{
				Index: int32(step), Name: "vmzones/bench", Operation: v1alpha1.StepPluginOperationRun,
				Phase: v1alpha1.StepPluginPhaseSuccessful, Message: fmt.Sprintf("zone-%02d drained", step),
				StartedAt:  payloads.Time(1760000000+int64(attempt*1000+step*10), 123456789, time.UTC),
				UpdatedAt:  payloads.Time(1760000001+int64(attempt*1000+step*10), 0, time.UTC),
				FinishedAt: payloads.Time(1760000002+int64(attempt*1000+step*10), 0, time.UTC),
				Backoff:    "30s", Executions: int32(attempt + 1),
				Status: json.RawMessage(fmt.Sprintf(`{"zone":"zone-%02d","before":{"replicas":3,"reads":true}}`, step)),
			})
		}
	}
	r.Status.Canary.StepPluginStatuses = statuses
	return r
}

// gobStream is the bytes of two Run request bodies on one encoder (type definitions, then two values).
func gobStream(rollout *v1alpha1.Rollout, context *types.RpcStepContext) []byte {
	var buf bytes.Buffer
	encoder := gob.NewEncoder(&buf)
	var args any = steprpc.RunArgs{Rollout: rollout, Context: context}
	for range 2 {
		if err := encoder.Encode(&args); err != nil {
			panic(err)
		}
	}
	return buf.Bytes()
}

// gobSizes encodes the Run body twice on one encoder, as net/rpc does on one stream.
func gobSizes(rollout *v1alpha1.Rollout, context *types.RpcStepContext) (first, steady int) {
	var buf bytes.Buffer
	encoder := gob.NewEncoder(&buf)
	var args any = steprpc.RunArgs{Rollout: rollout, Context: context}
	if err := encoder.Encode(&args); err != nil {
		panic(err)
	}
	first = buf.Len()
	buf.Reset()
	if err := encoder.Encode(&args); err != nil {
		panic(err)
	}
	return first, buf.Len()
}

func measure(target launch.Target, rollout, dense *v1alpha1.Rollout, context *types.RpcStepContext, sequential, concurrent, callers, launches int) (result, error) {
	r := result{name: target.Name}

	startups := make([]time.Duration, 0, launches)
	for range launches {
		began := time.Now()
		process, err := launch.Spawn(target, launch.StepRole, time.Minute)
		if err != nil {
			return r, fmt.Errorf("launch: %w", err)
		}
		startups = append(startups, time.Since(began))
		process.Kill()
	}
	r.startup = percentile(startups, 50)

	session, err := launch.Start(target, launch.StepRole)
	if err != nil {
		return r, err
	}
	defer session.Client.Kill()
	client := session.Dispensed.(*steprpc.StepPluginRPC)
	if e := client.InitPlugin(); e.HasError() {
		return r, fmt.Errorf("InitPlugin: %s", e.ErrorString)
	}
	call := func() error { return runOnce(client, rollout, context) }
	for range 100 { // warm-up: JIT, type definitions, buffers
		if err := call(); err != nil {
			return r, err
		}
	}
	r.p50, r.p99, err = latencies(sequential, call)
	if err != nil {
		return r, err
	}
	r.denseP50, r.denseP99, err = latencies(sequential, func() error { return runOnce(client, dense, context) })
	if err != nil {
		return r, err
	}

	var wg sync.WaitGroup
	var failure error
	var once sync.Once
	began := time.Now()
	for c := range callers {
		wg.Go(func() {
			for i := c; i < concurrent; i += callers {
				if err := call(); err != nil {
					once.Do(func() { failure = err })
					return
				}
			}
		})
	}
	wg.Wait()
	if failure != nil {
		return r, failure
	}
	r.callsPerS = float64(concurrent) / time.Since(began).Seconds()

	r.peakRSSKiB, err = peakRSS(session.Pid())
	return r, err
}

func runOnce(client *steprpc.StepPluginRPC, rollout *v1alpha1.Rollout, context *types.RpcStepContext) error {
	res, e := client.Run(rollout, context)
	if e.HasError() {
		return fmt.Errorf("Run: %s", e.ErrorString)
	}
	if res.Phase != types.PhaseSuccessful {
		return fmt.Errorf("Run: phase %q", res.Phase)
	}
	return nil
}

// latencies times n sequential calls and returns p50 and p99.
func latencies(n int, call func() error) (p50, p99 time.Duration, err error) {
	samples := make([]time.Duration, 0, n)
	for range n {
		began := time.Now()
		if err := call(); err != nil {
			return 0, 0, err
		}
		samples = append(samples, time.Since(began))
	}
	return percentile(samples, 50), percentile(samples, 99), nil
}

func percentile(values []time.Duration, p int) time.Duration {
	sorted := append([]time.Duration(nil), values...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i] < sorted[j] })
	index := (len(sorted)*p + 99) / 100
	return sorted[max(0, min(len(sorted)-1, index-1))]
}

// peakRSS reads VmHWM (peak resident set size) of a live process.
func peakRSS(pid int) (int64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			return strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
		}
	}
	return 0, fmt.Errorf("no VmHWM in /proc/%d/status", pid)
}
