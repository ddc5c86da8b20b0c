// Command reffixture is a Go reference implementation of the TS fixture plugin's contract
// (test/fixtures): the step-plugin-e2e semantics plus the echo modes, for both cookies. It exists
// to prove the conformance harness itself: every fixture test must pass against it, e.g.
//
//	go build -o bin/reffixture ./cmd/reffixture
//	CONFORMANCE_FIXTURE_ARGV='["'$PWD'/bin/reffixture"]' go test -run Fixture ./...
//
// (Go plugins do not exit on connection EOF nor on a corrupt stream, so the lifecycle tests that
// demand it fail against this binary, as they should.)
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"time"

	metricrpc "github.com/argoproj/argo-rollouts/metricproviders/plugin/rpc"
	"github.com/argoproj/argo-rollouts/pkg/apis/rollouts/v1alpha1"
	steprpc "github.com/argoproj/argo-rollouts/rollout/steps/plugin/rpc"
	"github.com/argoproj/argo-rollouts/utils/plugin/types"
	"github.com/google/uuid"
	goPlugin "github.com/hashicorp/go-plugin"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"vmzones/test/conformance/gobjson"
)

func main() {
	gobjson.RegisterName("step.RunArgs", steprpc.RunArgs{})
	gobjson.RegisterName("step.TerminateArgs", steprpc.TerminateArgs{})
	gobjson.RegisterName("step.AbortArgs", steprpc.AbortArgs{})
	gobjson.RegisterName("RunArgs", metricrpc.RunArgs{})
	gobjson.RegisterName("TerminateAndResumeArgs", metricrpc.TerminateAndResumeArgs{})

	cookie := os.Getenv("ARGO_ROLLOUTS_RPC_PLUGIN")
	plugins := map[string]goPlugin.Plugin{"RpcStepPlugin": &steprpc.RpcStepPlugin{Impl: stepFixture{}}}
	if cookie == "metricprovider" {
		plugins = map[string]goPlugin.Plugin{"RpcMetricProviderPlugin": &metricrpc.RpcMetricProviderPlugin{Impl: metricFixture{}}}
	} else {
		cookie = "step" // anything else: go-plugin refuses to serve with its own message
	}
	goPlugin.Serve(&goPlugin.ServeConfig{
		HandshakeConfig: goPlugin.HandshakeConfig{ProtocolVersion: 1, MagicCookieKey: "ARGO_ROLLOUTS_RPC_PLUGIN", MagicCookieValue: cookie},
		Plugins:         plugins,
	})
}

type stepConfig struct {
	Echo      string
	Return    string
	Requeue   string
	Abort     struct{ Return string }
	Terminate struct{ Return string }
}

type state struct {
	Data  string
	Count int
}

type stepFixture struct{}

func (stepFixture) InitPlugin() types.RpcError { return types.RpcError{} }
func (stepFixture) Type() string               { return "reffixture" }

func fail(format string, args ...any) (types.RpcStepResult, types.RpcError) {
	return types.RpcStepResult{}, types.RpcError{ErrorString: fmt.Sprintf(format, args...)}
}

func (f stepFixture) operate(operation string, rollout *v1alpha1.Rollout, ctx *types.RpcStepContext) (types.RpcStepResult, types.RpcError) {
	var config stepConfig
	var current state
	if ctx != nil && ctx.Config != nil {
		if err := json.Unmarshal(ctx.Config, &config); err != nil {
			return fail("could not unmarshal config: %v", err)
		}
	}
	if ctx != nil && ctx.Status != nil {
		if err := json.Unmarshal(ctx.Status, &current); err != nil {
			return fail("could not unmarshal status: %v", err)
		}
	}
	phaseName := map[string]string{"Run": config.Return, "Terminate": config.Terminate.Return, "Abort": config.Abort.Return}[operation]
	phase := types.PhaseSuccessful
	if phaseName != "" {
		phase = types.StepPhase(phaseName)
		// Like vmzones' adapter (and unlike step-plugin-e2e) "Error" is refused: see step_test.go.
		if err := phase.Validate(); err != nil || phase == types.PhaseError {
			return fail("could not parse phase: %v", err)
		}
	}
	var requeue time.Duration
	if operation == "Run" {
		if config.Requeue != "" {
			d, err := time.ParseDuration(config.Requeue)
			if err != nil {
				return fail("could not parse requeue duration: %v", err)
			}
			requeue = d
		}
		if current.Data == "" {
			current.Data = uuid.NewString()
		}
		current.Count++
	}
	var document any = current
	switch config.Echo {
	case "raw":
		var args any
		switch operation {
		case "Run":
			args = steprpc.RunArgs{Rollout: rollout, Context: ctx}
		case "Terminate":
			args = steprpc.TerminateArgs{Rollout: rollout, Context: ctx}
		default:
			args = steprpc.AbortArgs{Rollout: rollout, Context: ctx}
		}
		document = map[string]any{"raw": gobjson.Interface(map[string]string{"Run": "step.RunArgs", "Terminate": "step.TerminateArgs", "Abort": "step.AbortArgs"}[operation], args)}
	case "view":
		context := map[string]any{"pluginName": ctx.PluginName, "config": ctx.Config}
		if ctx.Status != nil {
			context["status"] = ctx.Status
		}
		document = map[string]any{"view": map[string]any{"rollout": gobjson.RolloutView(rollout), "context": context}}
	}
	status, err := json.Marshal(document)
	if err != nil {
		return fail("could not marshal status: %v", err)
	}
	return types.RpcStepResult{Phase: phase, RequeueAfter: requeue, Status: status}, types.RpcError{}
}

func (f stepFixture) Run(r *v1alpha1.Rollout, c *types.RpcStepContext) (types.RpcStepResult, types.RpcError) {
	return f.operate("Run", r, c)
}

func (f stepFixture) Terminate(r *v1alpha1.Rollout, c *types.RpcStepContext) (types.RpcStepResult, types.RpcError) {
	return f.operate("Terminate", r, c)
}

func (f stepFixture) Abort(r *v1alpha1.Rollout, c *types.RpcStepContext) (types.RpcStepResult, types.RpcError) {
	return f.operate("Abort", r, c)
}

type metricConfig struct {
	Echo               string
	Phase              v1alpha1.AnalysisPhase
	ResumeAfterSeconds int
	GCError            string
}

func configOf(metric v1alpha1.Metric) (metricConfig, error) {
	var config metricConfig
	for _, raw := range metric.Provider.Plugin {
		if err := json.Unmarshal(raw, &config); err != nil {
			return config, err
		}
	}
	return config, nil
}

type metricFixture struct{}

func (metricFixture) InitPlugin() types.RpcError { return types.RpcError{} }
func (metricFixture) Type() string               { return "reffixture" }

func (metricFixture) measure(run *v1alpha1.AnalysisRun, metric v1alpha1.Metric, previous *v1alpha1.Measurement) v1alpha1.Measurement {
	now := metav1.Now()
	config, err := configOf(metric)
	if err != nil {
		return v1alpha1.Measurement{Phase: v1alpha1.AnalysisPhaseError, Message: err.Error(), StartedAt: &now, FinishedAt: &now}
	}
	m := v1alpha1.Measurement{Phase: v1alpha1.AnalysisPhaseSuccessful, StartedAt: &now}
	if previous != nil && previous.StartedAt != nil {
		m.StartedAt = previous.StartedAt
	}
	if config.Phase != "" {
		m.Phase = config.Phase
	}
	if m.Phase == v1alpha1.AnalysisPhaseRunning {
		resume := metav1.NewTime(now.Add(time.Duration(config.ResumeAfterSeconds) * time.Second))
		m.ResumeAt = &resume
	} else {
		m.FinishedAt = &now
	}
	var echo any
	switch config.Echo {
	case "raw":
		if previous == nil {
			echo = gobjson.Interface("RunArgs", metricrpc.RunArgs{AnalysisRun: run, Metric: metric})
		} else {
			echo = gobjson.Interface("TerminateAndResumeArgs", metricrpc.TerminateAndResumeArgs{AnalysisRun: run, Metric: metric, Measurement: *previous})
		}
	case "view":
		view := map[string]any{"analysisRun": gobjson.AnalysisRunView(run), "metric": gobjson.MetricView(metric)}
		if previous != nil {
			view["measurement"] = gobjson.MeasurementView(*previous)
		}
		echo = view
	}
	if echo != nil {
		data, err := json.Marshal(echo)
		if err != nil {
			return v1alpha1.Measurement{Phase: v1alpha1.AnalysisPhaseError, Message: err.Error()}
		}
		m.Value = string(data)
	}
	return m
}

func (f metricFixture) Run(run *v1alpha1.AnalysisRun, metric v1alpha1.Metric) v1alpha1.Measurement {
	return f.measure(run, metric, nil)
}

func (f metricFixture) Resume(run *v1alpha1.AnalysisRun, metric v1alpha1.Metric, m v1alpha1.Measurement) v1alpha1.Measurement {
	return f.measure(run, metric, &m)
}

func (f metricFixture) Terminate(run *v1alpha1.AnalysisRun, metric v1alpha1.Metric, m v1alpha1.Measurement) v1alpha1.Measurement {
	return f.measure(run, metric, &m)
}

func (metricFixture) GarbageCollect(_ *v1alpha1.AnalysisRun, metric v1alpha1.Metric, _ int) types.RpcError {
	config, err := configOf(metric)
	if err != nil {
		return types.RpcError{ErrorString: err.Error()}
	}
	return types.RpcError{ErrorString: config.GCError}
}

func (metricFixture) GetMetadata(metric v1alpha1.Metric) map[string]string {
	return map[string]string{"echo": metric.Name}
}
