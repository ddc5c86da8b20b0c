package conformance_test

import (
	"strings"
	"testing"
	"time"

	metricrpc "github.com/argoproj/argo-rollouts/metricproviders/plugin/rpc"
	"github.com/argoproj/argo-rollouts/pkg/apis/rollouts/v1alpha1"

	"vmzones/test/conformance/gobjson"
	"vmzones/test/conformance/payloads"
)

type measurementCall struct {
	name  string
	gob   string
	call  func(run *v1alpha1.AnalysisRun, metric v1alpha1.Metric, measurement v1alpha1.Measurement) v1alpha1.Measurement
	input bool // whether the call carries the previous measurement
}

func measurementCalls(client *metricrpc.MetricsPluginRPC) []measurementCall {
	return []measurementCall{
		{"Run", "RunArgs", func(r *v1alpha1.AnalysisRun, m v1alpha1.Metric, _ v1alpha1.Measurement) v1alpha1.Measurement {
			return client.Run(r, m)
		}, false},
		{"Resume", "TerminateAndResumeArgs", client.Resume, true},
		{"Terminate", "TerminateAndResumeArgs", client.Terminate, true},
	}
}

func expectedArgs(c measurementCall, run *v1alpha1.AnalysisRun, metric v1alpha1.Metric, measurement v1alpha1.Measurement) any {
	if c.input {
		return gobjson.Interface(c.gob, metricrpc.TerminateAndResumeArgs{AnalysisRun: run, Metric: metric, Measurement: measurement})
	}
	return gobjson.Interface(c.gob, metricrpc.RunArgs{AnalysisRun: run, Metric: metric})
}

// TestMetricFixture drives every metric-provider RPC of the fixture through MetricsPluginRPC.
func TestMetricFixture(t *testing.T) {
	session, client := metricSession(t, fixtureTarget(t))
	run := payloads.AnalysisRun(fixtureMetricName)
	previous := payloads.Measurement()

	t.Run("Type", func(t *testing.T) {
		ping(t, session)
		if got := client.Type(); got == "" || strings.Contains(got, "rpc call error") {
			t.Fatalf("Type() = %q", got)
		}
	})

	for _, c := range measurementCalls(client) {
		t.Run(c.name+"DefaultsToSuccessful", func(t *testing.T) {
			ping(t, session)
			before := time.Now().Add(-2 * time.Second)
			got := c.call(run, payloads.Metric(fixtureMetricName, map[string]any{}), previous)
			after := time.Now().Add(2 * time.Second)
			if got.Phase != v1alpha1.AnalysisPhaseSuccessful {
				t.Errorf("Phase = %q (message %q), want Successful", got.Phase, got.Message)
			}
			if got.FinishedAt == nil || got.FinishedAt.Time.Before(before) || got.FinishedAt.Time.After(after) {
				t.Errorf("FinishedAt = %v, want the time of the call", got.FinishedAt)
			}
			switch {
			case got.StartedAt == nil:
				t.Errorf("StartedAt is not set")
			case c.input && !got.StartedAt.Time.Truncate(time.Second).Equal(previous.StartedAt.Time.Truncate(time.Second)):
				// The controller replaces the measurement with the reply: the start of the measurement is
				// kept. Compared to the second: Kubernetes persists metav1.Time with second precision, so a
				// measurement read back from the API server never has more.
				t.Errorf("StartedAt = %v, want the previous measurement's %v", got.StartedAt, previous.StartedAt)
			case !c.input && (got.StartedAt.Time.Before(before) || got.StartedAt.Time.After(after)):
				t.Errorf("StartedAt = %v, want the time of the call", got.StartedAt)
			}
			if got.ResumeAt != nil {
				t.Errorf("ResumeAt = %v for a finished measurement", got.ResumeAt)
			}
		})

		t.Run(c.name+"RunningSetsResumeAt", func(t *testing.T) {
			ping(t, session)
			before := time.Now().Add(45*time.Second - 2*time.Second)
			got := c.call(run, payloads.Metric(fixtureMetricName, map[string]any{"phase": "Running", "resumeAfterSeconds": 45}), previous)
			after := time.Now().Add(45*time.Second + 2*time.Second)
			if got.Phase != v1alpha1.AnalysisPhaseRunning {
				t.Fatalf("Phase = %q (message %q), want Running", got.Phase, got.Message)
			}
			if got.StartedAt == nil || got.ResumeAt == nil {
				t.Fatalf("StartedAt/ResumeAt = %v/%v, want both set", got.StartedAt, got.ResumeAt)
			}
			if got.ResumeAt.Time.Before(before) || got.ResumeAt.Time.After(after) {
				t.Errorf("ResumeAt = %v, want the time of the call + 45s", got.ResumeAt)
			}
			if got.FinishedAt != nil {
				t.Errorf("FinishedAt = %v on a Running measurement: the controller would treat it as finished and never Resume", got.FinishedAt)
			}
		})

		t.Run(c.name+"ErrorPhaseGetsClientPrefix", func(t *testing.T) {
			ping(t, session)
			got := c.call(run, payloads.Metric(fixtureMetricName, map[string]any{"phase": "Error"}), previous)
			prefix := "failed to " + strings.ToLower(c.name) + " via plugin: "
			if got.Phase != v1alpha1.AnalysisPhaseError || !strings.HasPrefix(got.Message, prefix) || strings.Contains(got.Message, "rpc call error") {
				t.Errorf("got {Phase:%q Message:%q}, want an Error measurement with message prefix %q", got.Phase, got.Message, prefix)
			}
		})

		t.Run(c.name+"RawEcho", func(t *testing.T) {
			ping(t, session)
			metric := payloads.Metric(fixtureMetricName, map[string]any{"echo": "raw", "phase": "Inconclusive"})
			got := c.call(run, metric, previous)
			if got.Phase != v1alpha1.AnalysisPhaseInconclusive {
				t.Errorf("Phase = %q (message %q), want Inconclusive", got.Phase, got.Message)
			}
			assertSame(t, c.name+" raw echo", expectedArgs(c, run, metric, previous), echoed(t, []byte(`{"raw":`+got.Value+`}`), "raw"))
		})

		t.Run(c.name+"ViewEcho", func(t *testing.T) {
			ping(t, session)
			metric := payloads.Metric(fixtureMetricName, map[string]any{"echo": "view"})
			got := c.call(run, metric, previous)
			want := map[string]any{
				"analysisRun": gobjson.AnalysisRunView(run),
				"metric":      gobjson.MetricView(metric),
			}
			if c.input {
				want["measurement"] = gobjson.MeasurementView(previous)
			}
			assertSame(t, c.name+" view echo", want, []byte(got.Value))
		})
	}

	t.Run("GetMetadata", func(t *testing.T) {
		ping(t, session)
		metric := payloads.Metric(fixtureMetricName, map[string]any{})
		metric.Name = "gate-" + payloads.UnicodeLabel
		got := client.GetMetadata(metric)
		if len(got) != 1 || got["echo"] != metric.Name {
			t.Errorf("GetMetadata = %v, want map[echo:%s]", got, metric.Name)
		}
	})

	t.Run("GarbageCollect", func(t *testing.T) {
		ping(t, session)
		if err := client.GarbageCollect(run, payloads.Metric(fixtureMetricName, map[string]any{}), 10); err.HasError() {
			t.Errorf("GarbageCollect = RpcError %q, want none", err.ErrorString)
		}
		ping(t, session)
		message := "gc refused: " + payloads.UnicodeText
		err := client.GarbageCollect(run, payloads.Metric(fixtureMetricName, map[string]any{"gcError": message}), 3)
		if err.ErrorString != message {
			t.Errorf("GarbageCollect error = %q, want %q", err.ErrorString, message)
		}
	})

	t.Run("PayloadOver1MiB", func(t *testing.T) {
		large := payloads.AnalysisRun(fixtureMetricName)
		large.Annotations["vmzones.io/large"] = strings.Repeat("zone-ü-🚀-", 1<<20/12+100)
		ping(t, session)
		metric := payloads.Metric(fixtureMetricName, map[string]any{"echo": "raw"})
		got := client.Resume(large, metric, previous)
		if len(got.Value) < 1<<20 {
			t.Fatalf("echo of a >1 MiB AnalysisRun is only %d bytes (phase %q, message %q)", len(got.Value), got.Phase, got.Message)
		}
		assertSame(t, "raw echo", metricrpcResumeArgs(large, metric, previous), echoed(t, []byte(`{"raw":`+got.Value+`}`), "raw"))
	})
}

func metricrpcResumeArgs(run *v1alpha1.AnalysisRun, metric v1alpha1.Metric, measurement v1alpha1.Measurement) any {
	return gobjson.Interface("TerminateAndResumeArgs", metricrpc.TerminateAndResumeArgs{AnalysisRun: run, Metric: metric, Measurement: measurement})
}
