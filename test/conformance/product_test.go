package conformance_test

import (
	"strings"
	"testing"

	"github.com/argoproj/argo-rollouts/pkg/apis/rollouts/v1alpha1"
	"github.com/argoproj/argo-rollouts/utils/plugin/types"

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

func TestProductMetric(t *testing.T) {
	session, client := metricSession(t, productTarget(t))
	if got := client.Type(); got != "vmzones/gates" {
		t.Errorf("Type() = %q, want vmzones/gates", got)
	}
	run := payloads.AnalysisRun(productMetricName)
	metric := payloads.Metric(productMetricName, map[string]any{"gate": "vmclusterOperational", "zone": "zone-a"})
	for _, c := range measurementCalls(client) {
		t.Run(c.name, func(t *testing.T) {
			ping(t, session)
			got := c.call(run, metric, payloads.Measurement())
			assertNoTransportError(t, c.name, got.Message)
			switch got.Phase {
			case v1alpha1.AnalysisPhaseError, v1alpha1.AnalysisPhaseFailed, v1alpha1.AnalysisPhaseInconclusive, v1alpha1.AnalysisPhaseSuccessful:
				if got.Phase == v1alpha1.AnalysisPhaseError && !strings.HasPrefix(got.Message, "failed to ") {
					t.Errorf("Error measurement without the client's prefix: %q", got.Message)
				}
			case v1alpha1.AnalysisPhaseRunning:
				if got.ResumeAt == nil {
					t.Errorf("Running measurement without ResumeAt: nothing would schedule the Resume")
				}
			default:
				t.Errorf("%s returned phase %q", c.name, got.Phase)
			}
		})
	}
	t.Run("GarbageCollect", func(t *testing.T) {
		ping(t, session)
		if err := client.GarbageCollect(run, metric, 10); err.HasError() {
			assertNoTransportError(t, "GarbageCollect", err.ErrorString)
		}
	})
	t.Run("GetMetadata", func(t *testing.T) {
		ping(t, session)
		got := client.GetMetadata(metric)
		assertNoTransportError(t, "GetMetadata", got["error"])
	})
}
