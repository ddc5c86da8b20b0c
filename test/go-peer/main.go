// go-peer drives a TypeScript go-plugin server (test/fixtures/fixture-plugin.ts, its EchoPlugin service) the
// way the Argo Rollouts controller drives its plugins: hashicorp/go-plugin v1.8.0's client (net/rpc over yamux),
// plus hand-rolled sessions that check behaviour go-plugin's client does not expose (yamux pings,
// protocol violations, exit codes). It prints "PASS <check>" / "FAIL <check>: <why>" lines and
// "METRIC <name>=<value>" lines, and exits 1 if any check failed.
package main

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"encoding/gob"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/rpc"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	plugin "github.com/hashicorp/go-plugin"
	"github.com/hashicorp/yamux"
)

type EchoArgs struct {
	Text   string
	Data   []byte
	Number int64
	Big    uint64
}

type EchoReply struct {
	Text   string
	Data   []byte
	Number int64
	Big    uint64
	Length int64
}

type GatherArgs struct {
	Tag   int64
	Count int64
}

type GatherReply struct {
	Tag  int64
	Rank int64
}

// echoPlugin is a client-only go-plugin Plugin whose dispensed value is the raw *rpc.Client.
type echoPlugin struct{}

func (echoPlugin) Server(*plugin.MuxBroker) (interface{}, error) {
	return nil, errors.New("client only")
}

func (echoPlugin) Client(_ *plugin.MuxBroker, c *rpc.Client) (interface{}, error) { return c, nil }

var (
	nodePath    = flag.String("node", "", "Node 24 binary")
	fixturePath = flag.String("fixture", "", "fixture plugin entry (.ts or .mjs)")
	failures    = 0
	wedged      = false
)

const cookieKey = "ARGO_ROLLOUTS_RPC_PLUGIN"

func pass(check string, format string, args ...interface{}) {
	detail := fmt.Sprintf(format, args...)
	if detail != "" {
		detail = " " + detail
	}
	fmt.Printf("PASS %s%s\n", check, detail)
}

func fail(check string, format string, args ...interface{}) {
	failures++
	fmt.Printf("FAIL %s: %s\n", check, fmt.Sprintf(format, args...))
}

// call is rpc.Client.Call with a deadline, so that a wedged server fails the check instead of hanging it.
// After one timeout the connection is considered wedged and later calls of the scenario fail at once.
func call(c *rpc.Client, method string, args interface{}, reply interface{}) error {
	if wedged {
		return fmt.Errorf("%s: not attempted, the connection is wedged", method)
	}
	// Go() itself blocks while the request is written (e.g. on a closed yamux window), so run it aside.
	result := make(chan error, 1)
	go func() { result <- c.Call(method, args, reply) }()
	select {
	case err := <-result:
		return err
	case <-time.After(30 * time.Second):
		wedged = true
		return fmt.Errorf("%s: no reply within 30 s", method)
	}
}

func metric(name string, value interface{}) { fmt.Printf("METRIC %s=%v\n", name, value) }

func randomBytes(n int) []byte {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return b
}

func main() {
	flag.Parse()
	if *nodePath == "" || *fixturePath == "" {
		fmt.Fprintln(os.Stderr, "usage: go-peer -node <node24> -fixture <fixture-plugin.ts>")
		os.Exit(2)
	}
	gob.Register(EchoArgs{})
	goPluginClient("unix")
	goPluginClient("tcp")
	rawSessionChecks()
	gobCorruption()
	yamuxCorruption()
	notLaunchedByHost()
	wrongProtocolVersion()
	if failures > 0 {
		fmt.Printf("go-peer: %d check(s) failed\n", failures)
		os.Exit(1)
	}
	fmt.Println("go-peer: all checks passed")
}

func fixtureCommand(extraEnv ...string) *exec.Cmd {
	cmd := exec.Command(*nodePath, *fixturePath)
	cmd.Env = append(os.Environ(), extraEnv...)
	return cmd
}

// goPluginClient uses go-plugin's client with the controller's ClientConfig (docs/protocol.md, "The controller's plugin client").
func goPluginClient(network string) {
	prefix := "goplugin-" + network + "/"
	wedged = false
	cmd := fixtureCommand("FIXTURE_NETWORK=" + network)
	client := plugin.NewClient(&plugin.ClientConfig{
		HandshakeConfig: plugin.HandshakeConfig{
			ProtocolVersion:  1,
			MagicCookieKey:   cookieKey,
			MagicCookieValue: "step",
		},
		Plugins: map[string]plugin.Plugin{"EchoPlugin": &echoPlugin{}, "NoSuchPlugin": &echoPlugin{}},
		Cmd:     cmd,
		Managed: true,
	})
	defer client.Kill()

	start := time.Now()
	rpcClient, err := client.Client()
	if err != nil {
		fail(prefix+"handshake", "%v", err)
		return
	}
	metric(prefix+"start_ms", time.Since(start).Milliseconds())
	pass(prefix+"handshake", "protocol=%s", client.Protocol())

	raw, err := rpcClient.Dispense("EchoPlugin")
	if err != nil {
		fail(prefix+"dispense", "%v", err)
		return
	}
	pass(prefix+"dispense", "")
	c := raw.(*rpc.Client)

	if _, err := rpcClient.Dispense("NoSuchPlugin"); err == nil || err.Error() != "unknown plugin type: NoSuchPlugin" {
		fail(prefix+"dispense-unknown", "got %v", err)
	} else {
		pass(prefix+"dispense-unknown", "")
	}

	if err := rpcClient.Ping(); err != nil {
		fail(prefix+"ping", "%v", err)
	} else {
		pass(prefix+"ping", "")
	}

	// A > 1 MiB argument and reply: both directions must honour the 256 KiB yamux window.
	big := EchoArgs{Text: "héllo", Data: randomBytes(1536 * 1024), Number: -42, Big: 1 << 62}
	var reply EchoReply
	start = time.Now()
	if err := call(c, "Plugin.Echo", big, &reply); err != nil {
		fail(prefix+"echo-1.5MiB", "%v", err)
	} else if reply.Text != big.Text || !bytes.Equal(reply.Data, big.Data) || reply.Number != big.Number ||
		reply.Big != big.Big || reply.Length != int64(len(big.Data)) {
		fail(prefix+"echo-1.5MiB", "reply differs: text=%q len=%d number=%d big=%d", reply.Text, len(reply.Data), reply.Number, reply.Big)
	} else {
		metric(prefix+"echo_1.5MiB_roundtrip_ms", time.Since(start).Milliseconds())
		pass(prefix+"echo-1.5MiB", "")
	}

	// Argo passes &args where args is an interface{}: the body is a gob interface value.
	var wrapped interface{} = EchoArgs{Text: "wrapped", Data: []byte{1, 2, 3}, Number: 7}
	reply = EchoReply{}
	if err := call(c, "Plugin.Echo", &wrapped, &reply); err != nil {
		fail(prefix+"echo-interface-arg", "%v", err)
	} else if reply.Text != "wrapped" || !bytes.Equal(reply.Data, []byte{1, 2, 3}) || reply.Number != 7 {
		fail(prefix+"echo-interface-arg", "reply differs: %+v", reply)
	} else {
		pass(prefix+"echo-interface-arg", "")
	}

	// 64 concurrent calls that the plugin can only answer once all 64 are in flight, in reverse order.
	const n = 64
	var wg sync.WaitGroup
	errs := make([]error, n)
	replies := make([]GatherReply, n)
	start = time.Now()
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			errs[i] = call(c, "Plugin.Gather", GatherArgs{Tag: int64(i + 1000), Count: n}, &replies[i])
		}(i)
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
		ranks := map[int64]bool{}
		ok := true
		for i := 0; i < n; i++ {
			if errs[i] != nil || replies[i].Tag != int64(i+1000) || replies[i].Rank < 0 || replies[i].Rank >= n || ranks[replies[i].Rank] {
				ok = false
				fail(prefix+"concurrent-64", "call %d: err=%v reply=%+v", i, errs[i], replies[i])
				break
			}
			ranks[replies[i].Rank] = true
		}
		if ok {
			metric(prefix+"concurrent_64_ms", time.Since(start).Milliseconds())
			pass(prefix+"concurrent-64", "")
		}
	case <-time.After(35 * time.Second):
		wedged = true
		fail(prefix+"concurrent-64", "calls not answered within 35 s (server not concurrent?)")
	}

	var unused EchoReply
	err = call(c, "Plugin.Fail", "it failed", &unused)
	if se, ok := err.(rpc.ServerError); !ok || string(se) != "boom: it failed" {
		fail(prefix+"server-error", "got %T %v", err, err)
	} else {
		pass(prefix+"server-error", "")
	}
	err = call(c, "Plugin.Nope", "x", &unused)
	if se, ok := err.(rpc.ServerError); !ok || string(se) != "rpc: can't find method Plugin.Nope" {
		fail(prefix+"unknown-method", "got %T %v", err, err)
	} else {
		pass(prefix+"unknown-method", "")
	}
	err = call(c, "Nope.Method", "x", &unused)
	if se, ok := err.(rpc.ServerError); !ok || string(se) != "rpc: can't find service Nope.Method" {
		fail(prefix+"unknown-service", "got %T %v", err, err)
	} else {
		pass(prefix+"unknown-service", "")
	}
	// The stream must still work after error replies.
	reply = EchoReply{}
	if err := call(c, "Plugin.Echo", EchoArgs{Text: "after errors"}, &reply); err != nil || reply.Text != "after errors" {
		fail(prefix+"echo-after-errors", "err=%v reply=%+v", err, reply)
	} else {
		pass(prefix+"echo-after-errors", "")
	}

	// Kill = Control.Quit, close streams and session, wait up to 2 s for the exit, else SIGKILL.
	start = time.Now()
	client.Kill()
	elapsed := time.Since(start)
	metric(prefix+"kill_ms", elapsed.Milliseconds())
	state := cmd.ProcessState
	switch {
	case !client.Exited():
		fail(prefix+"kill", "client does not report the process as exited")
	case elapsed >= 2*time.Second:
		fail(prefix+"kill", "took %v: the plugin did not exit after Quit (force-killed)", elapsed)
	case state == nil || !state.Exited() || state.ExitCode() != 0:
		fail(prefix+"kill", "process state %v", state)
	default:
		pass(prefix+"kill", "exit code 0 after Quit")
	}
}

// startFixture launches the plugin by hand and returns the handshake parts.
func startFixture(check string, env ...string) (*exec.Cmd, []string, *bytes.Buffer, error) {
	cmd := fixtureCommand(append([]string{cookieKey + "=step", "PLUGIN_PROTOCOL_VERSIONS=1",
		"PLUGIN_MIN_PORT=10000", "PLUGIN_MAX_PORT=25000"}, env...)...)
	stderr := &bytes.Buffer{}
	cmd.Stderr = stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, nil, nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, nil, nil, err
	}
	lineCh := make(chan string, 1)
	go func() {
		scanner := bufio.NewScanner(stdout)
		if scanner.Scan() {
			lineCh <- scanner.Text()
		} else {
			close(lineCh)
		}
		for scanner.Scan() {
			lineCh <- "EXTRA:" + scanner.Text()
		}
	}()
	select {
	case line, ok := <-lineCh:
		if !ok {
			_ = cmd.Wait()
			return nil, nil, nil, fmt.Errorf("no handshake line; stderr: %s", stderr.String())
		}
		return cmd, strings.Split(line, "|"), stderr, nil
	case <-time.After(60 * time.Second):
		_ = cmd.Process.Kill()
		return nil, nil, nil, errors.New("no handshake line within 60 s")
	}
}

func waitExit(cmd *exec.Cmd, limit time.Duration) (int, error) {
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
		return cmd.ProcessState.ExitCode(), nil
	case <-time.After(limit):
		_ = cmd.Process.Kill()
		<-done
		return -1, fmt.Errorf("process still running after %v", limit)
	}
}

// rawSessionChecks speaks go-plugin's protocol by hand over yamux to check what go-plugin's client hides.
func rawSessionChecks() {
	const check = "raw/"
	wedged = false
	cmd, parts, stderr, err := startFixture(check)
	if err != nil {
		fail(check+"handshake", "%v", err)
		return
	}
	line := strings.Join(parts, "|")
	if len(parts) != 6 || parts[0] != "1" || parts[1] != "1" || parts[2] != "unix" || parts[4] != "netrpc" || parts[5] != "" {
		fail(check+"handshake-line", "%q", line)
	} else {
		pass(check+"handshake-line", "%q", line)
	}
	conn, err := net.Dial(parts[2], parts[3])
	if err != nil {
		fail(check+"dial", "%v", err)
		_ = cmd.Process.Kill()
		return
	}
	if _, statErr := os.Stat(parts[3]); statErr == nil {
		// Not fatal, only hygiene: the socket file should go once the host is connected.
		time.Sleep(200 * time.Millisecond)
		if _, statErr := os.Stat(parts[3]); statErr == nil {
			fail(check+"socket-removed", "%s still exists after connect", parts[3])
		} else {
			pass(check+"socket-removed", "")
		}
	} else {
		pass(check+"socket-removed", "")
	}
	cfg := yamux.DefaultConfig()
	cfg.EnableKeepAlive = false
	cfg.LogOutput = io.Discard
	session, err := yamux.Client(conn, cfg)
	if err != nil {
		fail(check+"yamux", "%v", err)
		return
	}
	rtt, err := session.Ping()
	if err != nil {
		fail(check+"yamux-ping", "%v", err)
	} else {
		metric(check+"yamux_ping_rtt_us", rtt.Microseconds())
		pass(check+"yamux-ping", "")
	}
	control, _ := session.Open()
	_, _ = session.Open() // stdout
	_, _ = session.Open() // stderr
	ctl := rpc.NewClient(control)
	var id uint32
	if err := call(ctl, "Dispenser.Dispense", "EchoPlugin", &id); err != nil {
		fail(check+"dispense", "%v", err)
		return
	}
	var empty struct{}
	if err := call(ctl, "Control.Ping", true, &empty); err != nil {
		fail(check+"control-ping", "%v", err)
	} else {
		pass(check+"control-ping", "")
	}
	stream, err := session.OpenStream()
	if err != nil {
		fail(check+"broker", "%v", err)
		return
	}
	_ = binary.Write(stream, binary.LittleEndian, id)
	var ack uint32
	_ = stream.SetReadDeadline(time.Now().Add(30 * time.Second))
	err = binary.Read(stream, binary.LittleEndian, &ack)
	_ = stream.SetReadDeadline(time.Time{})
	if err != nil || ack != id {
		fail(check+"broker-ack", "ack=%d id=%d err=%v", ack, id, err)
		return
	}
	pass(check+"broker-ack", "id=%d", id)
	pc := rpc.NewClient(stream)
	var reply EchoReply
	data := randomBytes(1 << 20)
	if err := call(pc, "Plugin.Echo", EchoArgs{Data: data}, &reply); err != nil || !bytes.Equal(reply.Data, data) {
		fail(check+"echo-1MiB", "err=%v len=%d", err, len(reply.Data))
	} else {
		pass(check+"echo-1MiB", "")
	}
	// The host going away (connection EOF) must end the plugin cleanly.
	_ = session.Close()
	code, err := waitExit(cmd, 5*time.Second)
	if err != nil || code != 0 {
		fail(check+"exit-on-eof", "code=%d err=%v stderr=%s", code, err, stderr.String())
	} else {
		pass(check+"exit-on-eof", "")
	}
	for _, l := range strings.Split(stderr.String(), "\n") {
		if l == "" {
			continue
		}
		if !strings.HasPrefix(l, "{") || !strings.Contains(l, `"@timestamp"`) {
			fail(check+"stderr-is-hclog-json", "line %q", l)
			return
		}
	}
	pass(check+"stderr-is-hclog-json", "")
}

// dialBroker sets up control + a broker stream by hand and returns the raw broker stream.
func dialBroker(check string, conn net.Conn) (*yamux.Session, net.Conn, bool) {
	wedged = false
	cfg := yamux.DefaultConfig()
	cfg.EnableKeepAlive = false
	cfg.LogOutput = io.Discard
	session, err := yamux.Client(conn, cfg)
	if err != nil {
		fail(check, "yamux: %v", err)
		return nil, nil, false
	}
	control, _ := session.Open()
	_, _ = session.Open()
	_, _ = session.Open()
	var id uint32
	if err := call(rpc.NewClient(control), "Dispenser.Dispense", "EchoPlugin", &id); err != nil {
		fail(check, "dispense: %v", err)
		return nil, nil, false
	}
	stream, _ := session.OpenStream()
	_ = binary.Write(stream, binary.LittleEndian, id)
	var ack uint32
	_ = stream.SetReadDeadline(time.Now().Add(30 * time.Second))
	if err := binary.Read(stream, binary.LittleEndian, &ack); err != nil {
		fail(check, "ack: %v", err)
		return nil, nil, false
	}
	return session, stream, true
}

// gobCorruption: a value of a never-defined gob type on the plugin stream must end the process (exit 1).
func gobCorruption() {
	const check = "raw/exit-on-gob-corruption"
	cmd, parts, stderr, err := startFixture(check)
	if err != nil {
		fail(check, "%v", err)
		return
	}
	conn, err := net.Dial(parts[2], parts[3])
	if err != nil {
		fail(check, "%v", err)
		return
	}
	session, stream, ok := dialBroker(check, conn)
	if !ok {
		_ = cmd.Process.Kill()
		return
	}
	defer session.Close()
	// Message of 3 bytes: type id 1000 (int, FE 07 D0), which was never defined on this stream.
	_, _ = stream.Write([]byte{0x03, 0xFE, 0x07, 0xD0})
	code, err := waitExit(cmd, 5*time.Second)
	if err != nil || code != 1 {
		fail(check, "code=%d err=%v stderr=%s", code, err, stderr.String())
		return
	}
	pass(check, "")
}

// yamuxCorruption: a frame with protocol version 1 must get GoAway(protocol error) and exit code 1.
func yamuxCorruption() {
	const check = "raw/yamux-bad-version-goaway"
	cmd, parts, stderr, err := startFixture(check)
	if err != nil {
		fail(check, "%v", err)
		return
	}
	conn, err := net.Dial(parts[2], parts[3])
	if err != nil {
		fail(check, "%v", err)
		return
	}
	defer conn.Close()
	_, _ = conn.Write([]byte{1, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0})
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	got, _ := io.ReadAll(conn)
	want := []byte{0, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}
	code, werr := waitExit(cmd, 5*time.Second)
	if !bytes.Equal(got, want) || werr != nil || code != 1 {
		fail(check, "read % X (want % X), exit code %d, err %v, stderr %s", got, want, code, werr, stderr.String())
		return
	}
	pass(check, "")
}

func notLaunchedByHost() {
	const check = "env/cookie-missing"
	cmd := exec.Command(*nodePath, *fixturePath)
	env := []string{}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, cookieKey+"=") {
			env = append(env, kv)
		}
	}
	cmd.Env = env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := cmd.ProcessState.ExitCode()
	if code != 1 || stdout.Len() != 0 || !strings.Contains(stderr.String(), "must be launched by its host program") {
		fail(check, "code=%d err=%v stdout=%q stderr=%q", code, err, stdout.String(), stderr.String())
		return
	}
	pass(check, "")
}

func wrongProtocolVersion() {
	const check = "env/protocol-version-mismatch"
	cmd := fixtureCommand(cookieKey+"=step", "PLUGIN_PROTOCOL_VERSIONS=2,3")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	_ = cmd.Run()
	code := cmd.ProcessState.ExitCode()
	if code != 1 || stdout.Len() != 0 || !strings.Contains(stderr.String(), "PLUGIN_PROTOCOL_VERSIONS") {
		fail(check, "code=%d stdout=%q stderr=%q", code, stdout.String(), stderr.String())
		return
	}
	pass(check, "")
}
