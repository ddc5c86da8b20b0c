package conformance_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	metricrpc "github.com/argoproj/argo-rollouts/metricproviders/plugin/rpc"
	steprpc "github.com/argoproj/argo-rollouts/rollout/steps/plugin/rpc"
	goPlugin "github.com/hashicorp/go-plugin"

	"vmzones/test/conformance/gobjson"
	"vmzones/test/conformance/launch"
)

// Plugin names as they would appear in argo-rollouts-config.
const (
	fixtureStepName   = "vmzones/fixture-step"
	fixtureMetricName = "vmzones/fixture-gates"
	productStepName   = "vmzones/step"
	productMetricName = "vmzones/gates"
)

// sessionWatchdog bounds how long a plugin process may go without answering the controller's Ping
// (from its start, then from its last answered Ping): a session is as long as its test needs, a
// plugin that stops answering is killed within this bound.
const sessionWatchdog = 3 * time.Minute

// watchdogs holds each live session's watchdog timer (*launch.Session → *time.Timer) so that an
// answered Ping can re-arm it.
var watchdogs sync.Map

func TestMain(m *testing.M) {
	// The names under which the controller's client code sends the args inside interfaces.
	gobjson.RegisterName("step.RunArgs", steprpc.RunArgs{})
	gobjson.RegisterName("step.TerminateArgs", steprpc.TerminateArgs{})
	gobjson.RegisterName("step.AbortArgs", steprpc.AbortArgs{})
	gobjson.RegisterName("RunArgs", metricrpc.RunArgs{})
	gobjson.RegisterName("TerminateAndResumeArgs", metricrpc.TerminateAndResumeArgs{})
	gobjson.RegisterName("GarbageCollectArgs", metricrpc.GarbageCollectArgs{})
	gobjson.RegisterName("GetMetadataArgs", metricrpc.GetMetadataArgs{})
	code := m.Run()
	goPlugin.CleanupClients()
	os.Exit(code)
}

func fixtureTarget(t *testing.T) launch.Target {
	t.Helper()
	target, err := launch.Fixture()
	if err != nil {
		t.Fatalf("fixture plugin not available: %v", err)
	}
	return target
}

func productTarget(t *testing.T) launch.Target {
	t.Helper()
	target, err := launch.Product()
	if err != nil {
		t.Fatalf("product plugin not available: %v", err)
	}
	// The product needs a Kubernetes configuration to start (without one its InitPlugin fails, as
	// TestProductInitFailure checks). These tests pin the transport, not the API calls: the API server
	// named here refuses every connection (loopback, a port nothing listens on; https, as a real API server is:
	// vmzones takes plain HTTP only on loopback, for kubectl proxy), so calls fail as domain
	// errors. A test that needs another environment sets target.Env itself.
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte(unreachableKubeconfig), 0o600); err != nil {
		t.Fatal(err)
	}
	target.Env = []string{"KUBECONFIG=" + kubeconfig, "VMZONES_KUBECONFIG="}
	return target
}

const unreachableKubeconfig = `apiVersion: v1
kind: Config
clusters:
- name: unreachable
  cluster:
    server: https://127.0.0.1:1
users:
- name: nobody
  user: {}
contexts:
- name: unreachable
  context:
    cluster: unreachable
    user: nobody
current-context: unreachable
`

// start launches the target like the controller does and kills it when the test ends; on
// failure the plugin's relayed stderr is attached to the test output.
func start(t *testing.T, target launch.Target, role launch.Role) *launch.Session {
	t.Helper()
	session, err := launch.Start(target, role)
	if err != nil {
		t.Fatal(err)
	}
	// The controller's calls have no timeout; a plugin that stops answering (e.g. a flow-control
	// deadlock) would hang the suite. The watchdog kills it, so pending calls fail with
	// "connection is shut down" and name themselves.
	watchdog := time.AfterFunc(sessionWatchdog, func() {
		t.Errorf("watchdog: %s (%s) answered no Ping for %s; killing the plugin so that blocked calls fail", target.Name, role.Cookie, sessionWatchdog)
		session.Client.Kill()
	})
	watchdogs.Store(session, watchdog)
	t.Cleanup(func() {
		watchdogs.Delete(session)
		watchdog.Stop()
		session.Client.Kill()
		if t.Failed() {
			t.Logf("--- go-plugin log for %s (%s) ---\n%s", target.Name, role.Cookie, tail(session.Log.String(), 8000))
		}
	})
	return session
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}

// stepSession starts a step plugin, checks InitPlugin and returns the controller's client.
func stepSession(t *testing.T, target launch.Target) (*launch.Session, *steprpc.StepPluginRPC) {
	t.Helper()
	session := start(t, target, launch.StepRole)
	client, ok := session.Dispensed.(*steprpc.StepPluginRPC)
	if !ok {
		t.Fatalf("Dispense returned %T, want *rpc.StepPluginRPC", session.Dispensed)
	}
	if err := client.InitPlugin(); err.HasError() {
		t.Fatalf("InitPlugin: %s", err.ErrorString)
	}
	ping(t, session)
	return session, client
}

// metricSession starts a metric provider plugin, checks InitPlugin and returns the controller's client.
func metricSession(t *testing.T, target launch.Target) (*launch.Session, *metricrpc.MetricsPluginRPC) {
	t.Helper()
	session := start(t, target, launch.MetricRole)
	client, ok := session.Dispensed.(*metricrpc.MetricsPluginRPC)
	if !ok {
		t.Fatalf("Dispense returned %T, want *rpc.MetricsPluginRPC", session.Dispensed)
	}
	if err := client.InitPlugin(); err.HasError() {
		t.Fatalf("InitPlugin: %s", err.ErrorString)
	}
	ping(t, session)
	return session, client
}

// ping is what the controller does before handing out the plugin on every reconcile.
func ping(t *testing.T, session *launch.Session) {
	t.Helper()
	if err := pingSession(session); err != nil {
		t.Fatal(err)
	}
}

// pingSession is ping for goroutines other than the test's own (which must not call t.Fatal); an
// answered Ping re-arms the session's watchdog.
func pingSession(session *launch.Session) error {
	if err := session.Ping(); err != nil {
		return fmt.Errorf("Control.Ping failed: %w", err)
	}
	if watchdog, ok := watchdogs.Load(session); ok {
		watchdog.(*time.Timer).Reset(sessionWatchdog)
	}
	return nil
}

func rawJSON(t *testing.T, v any) json.RawMessage {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// echoed extracts key ("raw" or "view") from an echo document.
func echoed(t *testing.T, document []byte, key string) []byte {
	t.Helper()
	var envelope map[string]json.RawMessage
	if err := json.Unmarshal(document, &envelope); err != nil {
		t.Fatalf("echo is not a JSON object: %v (first bytes: %q)", err, tail(string(document), 300))
	}
	inner, ok := envelope[key]
	if !ok {
		keys := make([]string, 0, len(envelope))
		for k := range envelope {
			keys = append(keys, k)
		}
		t.Fatalf("echo has no %q key (keys: %v)", key, keys)
	}
	return inner
}

// assertSame compares a Go tree with the plugin's JSON after zero-normalization.
func assertSame(t *testing.T, what string, want any, got []byte) {
	t.Helper()
	diffs, err := gobjson.Compare(want, got, 25)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if len(diffs) > 0 {
		t.Errorf("%s differs from Go's value (%d lines):\n  %s", what, len(diffs), strings.Join(diffs, "\n  "))
	}
}
