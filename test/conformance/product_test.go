package conformance_test

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	steprpc "github.com/argoproj/argo-rollouts/rollout/steps/plugin/rpc"

	"github.com/argoproj/argo-rollouts/pkg/apis/rollouts/v1alpha1"
	"github.com/argoproj/argo-rollouts/utils/plugin/types"

	"vmzones/test/conformance/launch"
	"vmzones/test/conformance/payloads"
)

// The product's handlers may answer with a domain error (until they are implemented, "not
// implemented yet"); what this test pins down is the transport: every RPC reaches the plugin,
// every reply decodes in Go, and errors travel the way the controller expects (RpcError for
// steps, an Error measurement for metrics), never as a transport failure.

func assertNoTransportError(t *testing.T, what, message string) {
	t.Helper()
	if strings.Contains(message, "rpc call error") {
		t.Errorf("%s failed in transport: %s", what, message)
	}
}

func TestProductStep(t *testing.T) {
	session, client := stepSession(t, productTarget(t))
	if got := client.Type(); got != "vmzones/step" {
		t.Errorf("Type() = %q, want vmzones/step", got)
	}
	rollout := payloads.Rollout(productStepName)
	context := stepContext(productStepName, map[string]any{"zone": "zone-a", "action": "drainReads"}, nil)
	for _, c := range []struct {
		name string
		call stepCall
	}{{"Run", client.Run}, {"Terminate", client.Terminate}, {"Abort", client.Abort}} {
		t.Run(c.name, func(t *testing.T) {
			ping(t, session)
			result, rpcErr := c.call(rollout, context)
			if rpcErr.HasError() {
				assertNoTransportError(t, c.name, rpcErr.ErrorString)
				return
			}
			if err := result.Phase.Validate(); err != nil {
				t.Errorf("%s returned an invalid phase %q: the controller would fail the reconcile", c.name, result.Phase)
			}
			if c.name != "Run" && result.Phase == types.PhaseRunning {
				t.Errorf("%s returned Running; the controller turns that into Failed", c.name)
			}
		})
	}
}

// TestProductInitFailure: a step plugin whose InitPlugin fails (KUBECONFIG names a missing file)
// must deliver its error to the controller's client, then exit, so that the controller's next
// reconcile sees client.Exited() and starts a fresh process (it never calls InitPlugin twice on one
// process; docs/protocol.md).
func TestProductInitFailure(t *testing.T) {
	target := productTarget(t)
	missing := filepath.Join(t.TempDir(), "missing", "kubeconfig")
	target.Env = []string{"KUBECONFIG=" + missing, "VMZONES_KUBECONFIG="}
	session := start(t, target, launch.StepRole)
	client, ok := session.Dispensed.(*steprpc.StepPluginRPC)
	if !ok {
		t.Fatalf("Dispense returned %T, want *rpc.StepPluginRPC", session.Dispensed)
	}
	rpcErr := client.InitPlugin()
	if !rpcErr.HasError() {
		t.Fatalf("InitPlugin succeeded with KUBECONFIG=%s", missing)
	}
	if strings.Contains(rpcErr.ErrorString, "rpc call error") {
		t.Fatalf("InitPlugin failed in transport, the plugin's own error was lost: %s", rpcErr.ErrorString)
	}
	if !strings.Contains(rpcErr.ErrorString, missing) {
		t.Errorf("InitPlugin error %q does not name the kubeconfig %s", rpcErr.ErrorString, missing)
	}
	deadline := time.Now().Add(5 * time.Second)
	for !session.Client.Exited() {
		if time.Now().After(deadline) {
			t.Fatalf("the plugin still runs 5 s after a failed InitPlugin; the controller would keep using it uninitialised")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestProductMetric drives gate vmclusterReady through the controller's client against a small
// API server fixture (fakeAPIServer) that serves one VMCluster, and checks the measurements the
// real reading path produces for operational, expanding and failed.
func TestProductMetric(t *testing.T) {
	api := newFakeAPIServer(t)
	target := productTarget(t)
	target.Env = []string{"KUBECONFIG=" + api.Kubeconfig(t), "VMZONES_KUBECONFIG="}
	session, client := metricSession(t, target)
	if got := client.Type(); got != "vmzones/gates" {
		t.Errorf("Type() = %q, want vmzones/gates", got)
	}
	run := payloads.AnalysisRun(productMetricName)
	metric := payloads.Metric(productMetricName, map[string]any{"gate": "vmclusterReady", "vmcluster": "zone-a"})
	// Without conditions the gate's own verdict decides the phase.
	metric.SuccessCondition, metric.FailureCondition = "", ""
	clusterPath := "/apis/operator.victoriametrics.com/v1beta1/namespaces/" + run.Namespace + "/vmclusters/zone-a"

	api.SetVMCluster(run.Namespace, "zone-a", 4, 4, "operational", "")
	for _, c := range measurementCalls(client) {
		t.Run(c.name+"Operational", func(t *testing.T) {
			ping(t, session)
			before := api.Gets(clusterPath)
			got := c.call(run, metric, payloads.Measurement())
			assertNoTransportError(t, c.name, got.Message)
			if c.name == "Terminate" {
				if got.Phase != v1alpha1.AnalysisPhaseInconclusive {
					t.Errorf("Terminate = %q (%q), want Inconclusive", got.Phase, got.Message)
				}
				return
			}
			if got.Phase != v1alpha1.AnalysisPhaseSuccessful {
				t.Fatalf("%s = %q (%q), want Successful", c.name, got.Phase, got.Message)
			}
			if !strings.Contains(got.Message, "operational at generation 4") || !strings.Contains(got.Value, `"ready":true`) {
				t.Errorf("%s message %q / value %q do not report the operational VMCluster", c.name, got.Message, got.Value)
			}
			if api.Gets(clusterPath) != before+1 {
				t.Errorf("%s read %s %d times, want once", c.name, clusterPath, api.Gets(clusterPath)-before)
			}
		})
	}
	t.Run("RunExpanding", func(t *testing.T) {
		api.SetVMCluster(run.Namespace, "zone-a", 5, 5, "expanding", "")
		ping(t, session)
		got := client.Run(run, metric)
		if got.Phase != v1alpha1.AnalysisPhaseRunning || got.ResumeAt == nil {
			t.Fatalf("Run on an expanding VMCluster = %q (ResumeAt %v, %q), want Running with ResumeAt", got.Phase, got.ResumeAt, got.Message)
		}
		if !strings.Contains(got.Value, `"ready":false`) {
			t.Errorf("value %q does not say not ready", got.Value)
		}
	})
	t.Run("RunFailed", func(t *testing.T) {
		// The operator retries most failed reconciles itself (plugin/vm/operator-failure.ts): the gate waits them out.
		api.SetVMCluster(run.Namespace, "zone-a", 6, 6, "failed", "cannot pull image v9.9.9")
		ping(t, session)
		got := client.Run(run, metric)
		if got.Phase != v1alpha1.AnalysisPhaseRunning || got.ResumeAt == nil || !strings.Contains(got.Message, "cannot pull image v9.9.9") {
			t.Errorf("Run on a VMCluster failed for the first time = %q (ResumeAt %v, %q), want Running naming the operator's reason", got.Phase, got.ResumeAt, got.Message)
		}
		// A spec the operator cannot parse is final at once.
		api.SetVMCluster(run.Namespace, "zone-a", 7, 7, "failed", `parsing object error for object controller="vmcluster": "bad field"`)
		ping(t, session)
		got = client.Run(run, metric)
		if got.Phase != v1alpha1.AnalysisPhaseFailed || !strings.Contains(got.Message, "parsing object error") {
			t.Errorf("Run on a VMCluster whose spec the operator cannot parse = %q (%q), want Failed naming the operator's reason", got.Phase, got.Message)
		}
	})
	t.Run("GarbageCollect", func(t *testing.T) {
		ping(t, session)
		if err := client.GarbageCollect(run, metric, 10); err.HasError() {
			t.Errorf("GarbageCollect = %q, want no error", err.ErrorString)
		}
	})
	t.Run("GetMetadata", func(t *testing.T) {
		ping(t, session)
		got := client.GetMetadata(metric)
		if got["error"] != "" || got["vmzones.io/gate"] != "vmclusterReady" {
			t.Errorf("GetMetadata = %v, want vmzones.io/gate=vmclusterReady and no error", got)
		}
	})
}
