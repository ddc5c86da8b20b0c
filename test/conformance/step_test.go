package conformance_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/argoproj/argo-rollouts/pkg/apis/rollouts/v1alpha1"
	steprpc "github.com/argoproj/argo-rollouts/rollout/steps/plugin/rpc"
	"github.com/argoproj/argo-rollouts/utils/plugin/types"

	"vmzones/test/conformance/gobjson"
	"vmzones/test/conformance/payloads"
)

// e2eState is the status document of Argo Rollouts' test/cmd/step-plugin-e2e plugin. Go's
// json.Unmarshal matches keys case-insensitively, exactly like that plugin reads its own status.
type e2eState struct {
	Data  string
	Count int
}

func decodeState(t *testing.T, status json.RawMessage) e2eState {
	t.Helper()
	var state e2eState
	if err := json.Unmarshal(status, &state); err != nil {
		t.Fatalf("status %q is not the e2e state document: %v", status, err)
	}
	return state
}

func stepContext(name string, config any, status json.RawMessage) *types.RpcStepContext {
	data, err := json.Marshal(config)
	if err != nil {
		panic(err)
	}
	return &types.RpcStepContext{PluginName: name, Config: data, Status: status}
}

type stepCall func(*v1alpha1.Rollout, *types.RpcStepContext) (types.RpcStepResult, types.RpcError)

// succeeded fails the test when a step call returned an RpcError; use as succeeded(t, "Run")(client.Run(...)).
func succeeded(t *testing.T, what string) func(types.RpcStepResult, types.RpcError) types.RpcStepResult {
	return func(result types.RpcStepResult, rpcErr types.RpcError) types.RpcStepResult {
		t.Helper()
		if rpcErr.HasError() {
			t.Fatalf("%s returned RpcError %q", what, rpcErr.ErrorString)
		}
		return result
	}
}

// TestStepFixture drives every step RPC of the fixture through StepPluginRPC and checks the
// step-plugin-e2e semantics and the echo modes.
func TestStepFixture(t *testing.T) {
	session, client := stepSession(t, fixtureTarget(t))
	rollout := payloads.Rollout(fixtureStepName)

	t.Run("Type", func(t *testing.T) {
		ping(t, session)
		got := client.Type()
		if got == "" || strings.Contains(got, "rpc call error") {
			t.Fatalf("Type() = %q", got)
		}
	})

	t.Run("RunDefaultsToSuccessfulWithNewState", func(t *testing.T) {
		ping(t, session)
		result := succeeded(t, "Run")(client.Run(rollout, stepContext(fixtureStepName, map[string]any{}, nil)))
		if result.Phase != types.PhaseSuccessful || result.RequeueAfter != 0 || result.Message != "" {
			t.Errorf("result = {Phase:%q RequeueAfter:%v Message:%q}, want {Successful 0 \"\"}", result.Phase, result.RequeueAfter, result.Message)
		}
		state := decodeState(t, result.Status)
		if len(state.Data) != 36 || state.Count != 1 {
			t.Errorf("state = %+v, want a 36-char uuid and Count 1", state)
		}
	})

	t.Run("RunWithEmptyRolloutAndContext", func(t *testing.T) {
		ping(t, session)
		result := succeeded(t, "Run")(client.Run(&v1alpha1.Rollout{}, &types.RpcStepContext{}))
		if result.Phase != types.PhaseSuccessful || decodeState(t, result.Status).Count != 1 {
			t.Errorf("result = %+v", result)
		}
	})

	t.Run("RunCarriesStatusForward", func(t *testing.T) {
		ping(t, session)
		previous := json.RawMessage(`{"Data":"carried-ünïcödé","Count":41}`)
		result := succeeded(t, "Run")(client.Run(rollout, stepContext(fixtureStepName, map[string]any{}, previous)))
		if state := decodeState(t, result.Status); state.Data != "carried-ünïcödé" || state.Count != 42 {
			t.Errorf("state = %+v, want {carried-ünïcödé 42}", state)
		}
		// And again with the state the plugin returned, as the controller does.
		again := succeeded(t, "Run")(client.Run(rollout, stepContext(fixtureStepName, map[string]any{}, result.Status)))
		if state := decodeState(t, again.Status); state.Count != 43 {
			t.Errorf("second run state = %+v, want Count 43", state)
		}
	})

	t.Run("RunPhasesAndRequeue", func(t *testing.T) {
		cases := []struct {
			config  map[string]any
			phase   types.StepPhase
			requeue time.Duration
		}{
			{map[string]any{"return": "Running", "requeue": "17s"}, types.PhaseRunning, 17 * time.Second},
			{map[string]any{"return": "Running", "requeue": "1h2m3.5s"}, types.PhaseRunning, time.Hour + 2*time.Minute + 3500*time.Millisecond},
			{map[string]any{"return": "Running", "requeue": "250ms"}, types.PhaseRunning, 250 * time.Millisecond},
			{map[string]any{"return": "Running", "requeue": "2562047h"}, types.PhaseRunning, 2562047 * time.Hour},
			{map[string]any{"return": "Failed"}, types.PhaseFailed, 0},
			{map[string]any{"return": "Successful", "requeue": "0s"}, types.PhaseSuccessful, 0},
		}
		for _, c := range cases {
			ping(t, session)
			result := succeeded(t, "Run")(client.Run(rollout, stepContext(fixtureStepName, c.config, nil)))
			if result.Phase != c.phase || result.RequeueAfter != c.requeue {
				t.Errorf("config %v: got {Phase:%q RequeueAfter:%d}, want {%q %d}", c.config, result.Phase, result.RequeueAfter, c.phase, c.requeue)
			}
		}
	})

	t.Run("RunRejectsBadConfigWithRpcError", func(t *testing.T) {
		cases := []struct {
			context *types.RpcStepContext
			mention string
		}{
			{stepContext(fixtureStepName, map[string]any{"return": "Bogus"}, nil), "phase"},
			// step-plugin-e2e passes "Error" through (StepPhase.Validate accepts it); vmzones' adapter
			// deliberately refuses it, because a Phase "Error" result leaves the controller with an
			// empty backoff it cannot parse (it never calls the plugin again). An RpcError is the
			// retryable way to report an error.
			{stepContext(fixtureStepName, map[string]any{"return": "Error"}, nil), "phase"},
			{stepContext(fixtureStepName, map[string]any{"requeue": "soon"}, nil), "duration"},
			{&types.RpcStepContext{PluginName: fixtureStepName, Config: json.RawMessage(`{"return":`)}, "config"},
			{&types.RpcStepContext{PluginName: fixtureStepName, Config: json.RawMessage(`{}`), Status: json.RawMessage(`[1,`)}, "status"},
		}
		for _, c := range cases {
			ping(t, session)
			result, rpcErr := client.Run(rollout, c.context)
			if !rpcErr.HasError() {
				t.Errorf("config %s status %s: no RpcError (result %+v)", c.context.Config, c.context.Status, result)
				continue
			}
			if strings.Contains(rpcErr.ErrorString, "rpc call error") || !strings.Contains(strings.ToLower(rpcErr.ErrorString), c.mention) {
				t.Errorf("config %s: RpcError %q should be the plugin's own error mentioning %q", c.context.Config, rpcErr.ErrorString, c.mention)
			}
		}
	})

	operations := []struct {
		name      string
		call      stepCall
		configKey string
	}{
		{"Terminate", client.Terminate, "terminate"},
		{"Abort", client.Abort, "abort"},
	}
	for _, op := range operations {
		t.Run(op.name+"KeepsStateAndDefaultsToSuccessful", func(t *testing.T) {
			ping(t, session)
			previous := json.RawMessage(`{"Data":"run-state","Count":5}`)
			result := succeeded(t, op.name)(op.call(rollout, stepContext(fixtureStepName, map[string]any{"return": "Failed"}, previous)))
			if result.Phase != types.PhaseSuccessful || result.RequeueAfter != 0 {
				t.Errorf("got {Phase:%q RequeueAfter:%v}, want Successful (the Run's `return` must not apply)", result.Phase, result.RequeueAfter)
			}
			if state := decodeState(t, result.Status); state != (e2eState{Data: "run-state", Count: 5}) {
				t.Errorf("state = %+v, want the Run state unchanged", state)
			}
		})
		t.Run(op.name+"UsesItsOwnReturn", func(t *testing.T) {
			ping(t, session)
			config := map[string]any{op.configKey: map[string]any{"return": "Failed"}}
			result := succeeded(t, op.name)(op.call(rollout, stepContext(fixtureStepName, config, nil)))
			if result.Phase != types.PhaseFailed {
				t.Errorf("Phase = %q, want Failed", result.Phase)
			}
			ping(t, session)
			config = map[string]any{op.configKey: map[string]any{"return": "Nope"}}
			if _, rpcErr := op.call(rollout, stepContext(fixtureStepName, config, nil)); !rpcErr.HasError() {
				t.Errorf("invalid %s.return accepted", op.configKey)
			}
		})
	}

	t.Run("RawEcho", func(t *testing.T) {
		calls := []struct {
			name  string
			call  stepCall
			iface func(*v1alpha1.Rollout, *types.RpcStepContext) any
		}{
			{"Run", client.Run, func(r *v1alpha1.Rollout, c *types.RpcStepContext) any {
				return gobjson.Interface("step.RunArgs", steprpc.RunArgs{Rollout: r, Context: c})
			}},
			{"Terminate", client.Terminate, func(r *v1alpha1.Rollout, c *types.RpcStepContext) any {
				return gobjson.Interface("step.TerminateArgs", steprpc.TerminateArgs{Rollout: r, Context: c})
			}},
			{"Abort", client.Abort, func(r *v1alpha1.Rollout, c *types.RpcStepContext) any {
				return gobjson.Interface("step.AbortArgs", steprpc.AbortArgs{Rollout: r, Context: c})
			}},
		}
		for _, c := range calls {
			t.Run(c.name, func(t *testing.T) {
				ping(t, session)
				context := stepContext(fixtureStepName, map[string]any{"echo": "raw", "note": payloads.UnicodeText}, json.RawMessage(`{"Data":"x","Count":1,"nested":{"empty":[],"n":null}}`))
				result := succeeded(t, c.name)(c.call(rollout, context))
				assertSame(t, c.name+" raw echo", c.iface(rollout, context), echoed(t, result.Status, "raw"))
			})
		}
	})

	t.Run("NegativeSubMinuteZoneOffset", func(t *testing.T) {
		// The wire carries offsetMin=-296 and offsetSec=int8(-2); the sender's offset is -17762 s.
		// (Go's own decoder gets -17506 s here, so the Go reference fixture fails this subtest.)
		ping(t, session)
		odd := payloads.Rollout(fixtureStepName)
		odd.Status.AbortedAt = payloads.Time(1760000500, 7, payloads.ZoneNewYorkLMT)
		context := stepContext(fixtureStepName, map[string]any{"echo": "raw"}, nil)
		result := succeeded(t, "Run")(client.Run(odd, context))
		assertSame(t, "raw echo", gobjson.Interface("step.RunArgs", steprpc.RunArgs{Rollout: odd, Context: context}), echoed(t, result.Status, "raw"))
	})

	t.Run("ViewEcho", func(t *testing.T) {
		for _, c := range []struct {
			name string
			call stepCall
		}{{"Run", client.Run}, {"Terminate", client.Terminate}, {"Abort", client.Abort}} {
			t.Run(c.name, func(t *testing.T) {
				ping(t, session)
				status := json.RawMessage(`{"zone":"zone-a","before":{"replicas":3},"list":[1,"two",null]}`)
				config := map[string]any{"echo": "view", "zone": "zone-b", "unicode": payloads.UnicodeText}
				result := succeeded(t, c.name)(c.call(rollout, stepContext(fixtureStepName, config, status)))
				want := map[string]any{"rollout": gobjson.RolloutView(rollout), "context": map[string]any{
					"pluginName": fixtureStepName, "config": config, "status": json.RawMessage(status),
				}}
				assertSame(t, c.name+" view echo", want, echoed(t, result.Status, "view"))
			})
		}
	})

	t.Run("PayloadOver1MiB", func(t *testing.T) {
		large := payloads.LargeRollout(fixtureStepName, 1<<20+12345)
		for _, mode := range []string{"raw", "view"} {
			ping(t, session)
			context := stepContext(fixtureStepName, map[string]any{"echo": mode}, nil)
			result := succeeded(t, "Run")(client.Run(large, context))
			if len(result.Status) < 1<<20 {
				t.Errorf("%s echo of a >1 MiB rollout is only %d bytes", mode, len(result.Status))
			}
			if mode == "raw" {
				assertSame(t, "raw echo", gobjson.Interface("step.RunArgs", steprpc.RunArgs{Rollout: large, Context: context}), echoed(t, result.Status, "raw"))
			} else {
				want := map[string]any{"rollout": gobjson.RolloutView(large), "context": map[string]any{"pluginName": fixtureStepName, "config": map[string]any{"echo": mode}}}
				assertSame(t, "view echo", want, echoed(t, result.Status, "view"))
			}
		}
	})
}
