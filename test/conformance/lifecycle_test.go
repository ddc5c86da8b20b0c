package conformance_test

import (
	"bytes"
	"encoding/binary"
	"encoding/gob"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/rpc"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/argoproj/argo-rollouts/pkg/apis/rollouts/v1alpha1"
	"github.com/argoproj/argo-rollouts/utils/plugin/types"
	goPlugin "github.com/hashicorp/go-plugin"
	"github.com/hashicorp/yamux"

	"vmzones/test/conformance/launch"
	"vmzones/test/conformance/payloads"
)

// exitGrace is how long a plugin may take to notice its peer went away and exit.
const exitGrace = 10 * time.Second

// TestConcurrentCalls issues 64 calls at once on one plugin connection (as the controller's
// workers do) and checks that every reply belongs to its own request.
func TestConcurrentCalls(t *testing.T) {
	const callers = 64
	t.Run("Step", func(t *testing.T) {
		session, client := stepSession(t, fixtureTarget(t))
		rollout := payloads.Rollout(fixtureStepName)
		var wg sync.WaitGroup
		errs := make(chan string, callers)
		for i := range callers {
			wg.Go(func() {
				status := rawJSON(t, map[string]any{"Data": fmt.Sprintf("caller-%d", i), "Count": i * 1000})
				config := map[string]any{"return": "Running", "requeue": fmt.Sprintf("%ds", 11+i)}
				if i%8 == 0 {
					config["echo"] = "view" // some replies are large, so frames interleave
				}
				result, rpcErr := client.Run(rollout, stepContext(fixtureStepName, config, status))
				switch {
				case rpcErr.HasError():
					errs <- fmt.Sprintf("caller %d: RpcError %q", i, rpcErr.ErrorString)
				case i%8 == 0:
					// The echo's phase is the fixture's business; the reply must be this caller's view.
					var envelope struct {
						View struct {
							Context struct{ Config map[string]any }
						}
					}
					if err := json.Unmarshal(result.Status, &envelope); err != nil || envelope.View.Context.Config["requeue"] != config["requeue"] {
						errs <- fmt.Sprintf("caller %d: view echo does not carry this caller's config (%v): %.200s", i, err, result.Status)
					}
				case result.Phase != types.PhaseRunning || result.RequeueAfter != time.Duration(11+i)*time.Second:
					errs <- fmt.Sprintf("caller %d: got {%q %v}, want {Running %ds}", i, result.Phase, result.RequeueAfter, 11+i)
				default:
					var state e2eState
					if err := json.Unmarshal(result.Status, &state); err != nil || state.Data != fmt.Sprintf("caller-%d", i) || state.Count != i*1000+1 {
						errs <- fmt.Sprintf("caller %d: got state %s (someone else's reply?)", i, result.Status)
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		for e := range errs {
			t.Error(e)
		}
		ping(t, session)
	})
	t.Run("Metric", func(t *testing.T) {
		session, client := metricSession(t, fixtureTarget(t))
		run := payloads.AnalysisRun(fixtureMetricName)
		var wg sync.WaitGroup
		errs := make(chan string, callers)
		for i := range callers {
			wg.Go(func() {
				metric := payloads.Metric(fixtureMetricName, map[string]any{"phase": "Running", "resumeAfterSeconds": 100 + i})
				metric.Name = fmt.Sprintf("metric-%d", i)
				if i%2 == 0 {
					if got := client.GetMetadata(metric); got["echo"] != metric.Name {
						errs <- fmt.Sprintf("caller %d: GetMetadata = %v", i, got)
					}
					return
				}
				got := client.Run(run, metric)
				if got.Phase != v1alpha1.AnalysisPhaseRunning || got.ResumeAt == nil || got.StartedAt == nil {
					errs <- fmt.Sprintf("caller %d: got %+v", i, got)
					return
				}
				if gap := got.ResumeAt.Sub(got.StartedAt.Time); gap.Round(time.Second) != time.Duration(100+i)*time.Second {
					errs <- fmt.Sprintf("caller %d: ResumeAt-StartedAt = %v, want %ds (someone else's reply?)", i, gap, 100+i)
				}
			})
		}
		wg.Wait()
		close(errs)
		for e := range errs {
			t.Error(e)
		}
		ping(t, session)
	})
}

// TestKill checks the controller's Kill: Control.Quit, then the process must be gone before
// go-plugin's 2 s grace period ends (otherwise go-plugin logs "plugin failed to exit gracefully"
// and SIGKILLs it).
func TestKill(t *testing.T) {
	for _, c := range []struct {
		name   string
		target func(*testing.T) launch.Target
		role   launch.Role
	}{
		{"FixtureStep", fixtureTarget, launch.StepRole},
		{"FixtureMetric", fixtureTarget, launch.MetricRole},
		{"ProductStep", productTarget, launch.StepRole},
		{"ProductMetric", productTarget, launch.MetricRole},
	} {
		t.Run(c.name, func(t *testing.T) {
			session, err := launch.Start(c.target(t), c.role)
			if err != nil {
				t.Fatal(err)
			}
			pid := session.Pid()
			ping(t, session)
			session.Client.Kill()
			log := session.Log.String()
			if strings.Contains(log, "plugin failed to exit gracefully") {
				t.Errorf("plugin did not exit within 2 s of Control.Quit (go-plugin had to SIGKILL it)\n%s", tail(log, 4000))
			}
			if !session.Client.Exited() {
				t.Errorf("go-plugin does not consider the plugin exited after Kill")
			}
			if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
				t.Errorf("process %d still exists after Kill (kill -0: %v)", pid, err)
			}
		})
	}
}

// TestExitOnConnectionEOF closes the controller side of the connection without Control.Quit
// (what a crashed controller looks like): the plugin must exit by itself.
func TestExitOnConnectionEOF(t *testing.T) {
	for _, c := range []struct {
		name   string
		target func(*testing.T) launch.Target
		role   launch.Role
	}{
		{"FixtureStep", fixtureTarget, launch.StepRole},
		{"FixtureMetric", fixtureTarget, launch.MetricRole},
		{"ProductStep", productTarget, launch.StepRole},
		{"ProductMetric", productTarget, launch.MetricRole},
	} {
		role := c.role
		t.Run(c.name, func(t *testing.T) {
			process, err := launch.Spawn(c.target(t), role, time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			defer process.Kill()
			conn, err := process.Dial()
			if err != nil {
				t.Fatal(err)
			}
			client, err := goPlugin.NewRPCClient(conn, role.PluginMap())
			if err != nil {
				t.Fatal(err)
			}
			if _, err := client.Dispense(role.DispenseName); err != nil {
				t.Fatalf("Dispense: %v", err)
			}
			if err := client.Ping(); err != nil {
				t.Fatalf("Ping: %v", err)
			}
			_ = conn.Close() // no Control.Quit
			if !process.Exited(exitGrace) {
				t.Fatalf("plugin still running %s after the connection closed; stderr:\n%s", exitGrace, tail(process.Stderr.String(), 2000))
			}
		})
	}
}

// TestCookieRefused runs the executables by hand without (or with a wrong) magic cookie:
// non-zero exit, a message on stderr, nothing on stdout.
func TestCookieRefused(t *testing.T) {
	for _, c := range []struct {
		name   string
		target func(*testing.T) launch.Target
	}{{"Fixture", fixtureTarget}, {"Product", productTarget}} {
		for _, cookie := range []string{"", "bogus"} {
			t.Run(fmt.Sprintf("%s/cookie=%q", c.name, cookie), func(t *testing.T) {
				cmd := c.target(t).Cmd()
				env := []string{}
				for _, kv := range launch.ControllerEnv("x") {
					if !strings.HasPrefix(kv, launch.CookieKey+"=") {
						env = append(env, kv)
					}
				}
				if cookie != "" {
					env = append(env, launch.CookieKey+"="+cookie)
				}
				cmd.Env = env
				var stdout, stderr bytes.Buffer
				cmd.Stdout, cmd.Stderr = &stdout, &stderr
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				done := make(chan error, 1)
				go func() { done <- cmd.Wait() }()
				var err error
				select {
				case err = <-done:
				case <-time.After(exitGrace):
					_ = cmd.Process.Kill()
					<-done
					t.Fatalf("still running %s without a valid cookie; stdout %q", exitGrace, stdout.String())
				}
				var exitErr *exec.ExitError
				if !errors.As(err, &exitErr) || exitErr.ExitCode() == 0 {
					t.Errorf("exit status: %v, want a non-zero exit", err)
				}
				if stdout.Len() != 0 {
					t.Errorf("stdout = %q, want nothing (a controller would parse it as a handshake)", stdout.String())
				}
				if strings.TrimSpace(stderr.String()) == "" {
					t.Errorf("stderr is empty, want a message saying why")
				}
			})
		}
	}
}

// TestCorruptInputMakesPluginExit dials the plugin's socket with the go-plugin handshake and
// sends corrupt data: the plugin must exit rather than keep serving a stream whose state is
// unknown, and must never answer a corrupt request with a success.
func TestCorruptInputMakesPluginExit(t *testing.T) {
	cases := []struct {
		name string
		// corrupt gets the raw connection, the yamux session and the broker stream (after the
		// 4-byte id exchange) and sends something broken.
		corrupt func(conn net.Conn, broker net.Conn) error
	}{
		{"YamuxBadVersion", func(conn net.Conn, _ net.Conn) error {
			_, err := conn.Write([]byte{0x07, 0, 0, 0, 0, 0, 0, 7, 0, 0, 0, 4, 1, 2, 3, 4})
			return err
		}},
		{"YamuxBadType", func(conn net.Conn, _ net.Conn) error {
			_, err := conn.Write([]byte{0x00, 0x09, 0, 0, 0, 0, 0, 7, 0, 0, 0, 0})
			return err
		}},
		{"GobGarbageOnBrokerStream", func(_ net.Conn, broker net.Conn) error {
			_, err := broker.Write([]byte{0x09, 0xFF, 0x81, 0x7F, 0x7F, 0x7F, 0x7F, 0x7F, 0x7F, 0x7F})
			return err
		}},
		{"RunBodyWithUndefinedTypeId", func(_ net.Conn, broker net.Conn) error {
			var buf bytes.Buffer
			if err := gob.NewEncoder(&buf).Encode(&rpc.Request{ServiceMethod: "Plugin.Run", Seq: 0}); err != nil {
				return err
			}
			// Body: a value message of type id 100, which was never defined on this stream.
			buf.Write([]byte{0x03, 0xFF, 0xC8, 0x00})
			_, err := broker.Write(buf.Bytes())
			return err
		}},
		{"RunBodyTruncatedInterface", func(_ net.Conn, broker net.Conn) error {
			var header, body bytes.Buffer
			encoder := gob.NewEncoder(&header)
			if err := encoder.Encode(&rpc.Request{ServiceMethod: "Plugin.Run", Seq: 0}); err != nil {
				return err
			}
			// An interface body whose concrete value claims more bytes than its message holds.
			name := "step.RunArgs"
			body.WriteByte(0x00)
			body.WriteByte(byte(len(name)))
			body.WriteString(name)
			body.Write([]byte{0x02 /* int 1: type id 1 (bool) */, 0x7F /* value length 127 */, 0x01})
			message := append([]byte{byte(body.Len())}, body.Bytes()...)
			_, err := broker.Write(append(header.Bytes(), message...))
			return err
		}},
	}
	for _, role := range []launch.Role{launch.StepRole, launch.MetricRole} {
		for _, c := range cases {
			t.Run(role.Cookie+"/"+c.name, func(t *testing.T) {
				process, err := launch.Spawn(fixtureTarget(t), role, time.Minute)
				if err != nil {
					t.Fatal(err)
				}
				defer process.Kill()
				conn, err := process.Dial()
				if err != nil {
					t.Fatal(err)
				}
				defer conn.Close()
				session, broker := openBrokerStream(t, conn, role)
				defer session.Close()
				if err := c.corrupt(conn, broker); err != nil {
					t.Fatalf("sending corrupt data: %v", err)
				}
				reply := readUntilClosed(broker, exitGrace)
				if !process.Exited(exitGrace) {
					t.Errorf("plugin still running %s after corrupt input; stderr:\n%s", exitGrace, tail(process.Stderr.String(), 2000))
				}
				if answered, header := successfulResponse(reply); answered {
					t.Errorf("plugin answered the corrupt request as a success: %+v", header)
				}
			})
		}
	}
}

// openBrokerStream does what go-plugin's client does up to the first Plugin.* call: yamux client,
// control/stdout/stderr streams, Dispense, then the broker stream with the 4-byte id exchange.
func openBrokerStream(t *testing.T, conn net.Conn, role launch.Role) (*yamux.Session, net.Conn) {
	t.Helper()
	config := yamux.DefaultConfig()
	config.LogOutput = io.Discard
	session, err := yamux.Client(conn, config)
	if err != nil {
		t.Fatal(err)
	}
	control, err := session.Open()
	if err != nil {
		t.Fatal(err)
	}
	for range 2 { // stdout, stderr
		if _, err := session.Open(); err != nil {
			t.Fatal(err)
		}
	}
	var id uint32
	if err := rpc.NewClient(control).Call("Dispenser.Dispense", role.DispenseName, &id); err != nil {
		t.Fatalf("Dispense: %v", err)
	}
	broker, err := session.Open()
	if err != nil {
		t.Fatal(err)
	}
	if err := binary.Write(broker, binary.LittleEndian, id); err != nil {
		t.Fatal(err)
	}
	var ack uint32
	_ = broker.SetReadDeadline(time.Now().Add(5 * time.Second))
	if err := binary.Read(broker, binary.LittleEndian, &ack); err != nil || ack != id {
		t.Fatalf("broker ack: %v (got %d, want %d)", err, ack, id)
	}
	_ = broker.SetReadDeadline(time.Time{})
	return session, broker
}

func readUntilClosed(stream net.Conn, timeout time.Duration) []byte {
	_ = stream.SetReadDeadline(time.Now().Add(timeout))
	data, _ := io.ReadAll(stream)
	return data
}

// successfulResponse reports whether data starts with a net/rpc response header without error.
func successfulResponse(data []byte) (bool, rpc.Response) {
	var header rpc.Response
	if len(data) == 0 {
		return false, header
	}
	if err := gob.NewDecoder(bytes.NewReader(data)).Decode(&header); err != nil {
		return false, header
	}
	return header.Error == "", header
}
