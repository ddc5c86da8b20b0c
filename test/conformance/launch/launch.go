// Package launch starts plugin executables exactly the way the Argo Rollouts controller does
// (rollout/steps/plugin/client and metricproviders/plugin/client), and also by hand for the
// tests that need the raw socket.
package launch

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	metricrpc "github.com/argoproj/argo-rollouts/metricproviders/plugin/rpc"
	steprpc "github.com/argoproj/argo-rollouts/rollout/steps/plugin/rpc"
	"github.com/hashicorp/go-hclog"
	goPlugin "github.com/hashicorp/go-plugin"
)

// Role is one plugin kind: the cookie value, the dispense name and the go-plugin Plugin whose
// Client() yields the controller's own RPC client type.
type Role struct {
	Cookie       string
	DispenseName string
	plugin       goPlugin.Plugin
}

var (
	// StepRole mirrors rollout/steps/plugin/client.
	StepRole = Role{Cookie: "step", DispenseName: "RpcStepPlugin", plugin: &steprpc.RpcStepPlugin{}}
	// MetricRole mirrors metricproviders/plugin/client.
	MetricRole = Role{Cookie: "metricprovider", DispenseName: "RpcMetricProviderPlugin", plugin: &metricrpc.RpcMetricProviderPlugin{}}
)

// CookieKey is the magic cookie environment variable of Argo Rollouts plugins.
const CookieKey = "ARGO_ROLLOUTS_RPC_PLUGIN"

// HandshakeConfig is the controller's handshake for the role.
func (r Role) HandshakeConfig() goPlugin.HandshakeConfig {
	return goPlugin.HandshakeConfig{ProtocolVersion: 1, MagicCookieKey: CookieKey, MagicCookieValue: r.Cookie}
}

// PluginMap is the controller's plugin map for the role.
func (r Role) PluginMap() map[string]goPlugin.Plugin {
	return map[string]goPlugin.Plugin{r.DispenseName: r.plugin}
}

// Target is a plugin executable: argv as a ConfigMap entry would give it (location + args).
type Target struct {
	Name string
	Argv []string
	// Env is added to the host environment the plugin inherits (e.g. KUBECONFIG=...), as the
	// controller's own environment would carry it.
	Env []string
}

// Cmd returns a fresh exec.Cmd for the target (exec.Command(location, args...)).
func (t Target) Cmd() *exec.Cmd {
	cmd := exec.Command(t.Argv[0], t.Argv[1:]...)
	if len(t.Env) > 0 {
		cmd.Env = append(os.Environ(), t.Env...)
	}
	return cmd
}

// RepoRoot finds the vmzones checkout: $CONFORMANCE_REPO_ROOT, else the nearest ancestor of the
// working directory holding package.json.
func RepoRoot() (string, error) {
	if root := os.Getenv("CONFORMANCE_REPO_ROOT"); root != "" {
		return filepath.Abs(root)
	}
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "package.json")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no package.json above the working directory; set CONFORMANCE_REPO_ROOT")
		}
		dir = parent
	}
}

// NodeTarget is `<repo>/node_modules/node/bin/node <repo>/dist/<bundle>` unless the environment
// variable overrideVar holds a JSON array argv (used to run the harness against other builds).
func NodeTarget(name, bundle, overrideVar string) (Target, error) {
	if override := os.Getenv(overrideVar); override != "" {
		var argv []string
		if err := json.Unmarshal([]byte(override), &argv); err != nil || len(argv) == 0 {
			return Target{}, fmt.Errorf("%s must be a JSON array of strings (argv): %q", overrideVar, override)
		}
		return Target{Name: name, Argv: argv}, nil
	}
	root, err := RepoRoot()
	if err != nil {
		return Target{}, err
	}
	node := filepath.Join(root, "node_modules", "node", "bin", "node")
	script := filepath.Join(root, "dist", bundle)
	for _, path := range []string{node, script} {
		if _, err := os.Stat(path); err != nil {
			return Target{}, fmt.Errorf("%s is missing (run `npm ci` and `npm run build` first): %w", path, err)
		}
	}
	return Target{Name: name, Argv: []string{node, script}}, nil
}

// Fixture is the TS test fixture plugin (dist/fixture-plugin.mjs).
func Fixture() (Target, error) {
	return NodeTarget("fixture", "fixture-plugin.mjs", "CONFORMANCE_FIXTURE_ARGV")
}

// Product is the vmzones plugin (dist/vmzones.mjs).
func Product() (Target, error) {
	return NodeTarget("product", "vmzones.mjs", "CONFORMANCE_PRODUCT_ARGV")
}

// SyncBuffer is a goroutine-safe log sink.
type SyncBuffer struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (b *SyncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *SyncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Session is a plugin started through go-plugin exactly like the controller starts it.
type Session struct {
	Client *goPlugin.Client
	RPC    goPlugin.ClientProtocol
	// Dispensed is the controller's RPC client (*StepPluginRPC or *MetricsPluginRPC).
	Dispensed any
	// Log receives go-plugin's own log lines, including the plugin's stderr relayed line by line.
	Log *SyncBuffer
}

// Start launches target in role with the controller's exact ClientConfig, then dispenses.
// The only deviation is the hclog output (a buffer instead of the controller's stderr), which
// does not affect the wire.
func Start(target Target, role Role) (*Session, error) {
	log := &SyncBuffer{}
	client := goPlugin.NewClient(&goPlugin.ClientConfig{
		HandshakeConfig: role.HandshakeConfig(),
		Plugins:         role.PluginMap(),
		Cmd:             target.Cmd(),
		Managed:         true,
		Logger:          hclog.New(&hclog.LoggerOptions{Name: "plugin", Level: hclog.Trace, Output: log}),
	})
	rpcClient, err := client.Client()
	if err != nil {
		client.Kill()
		return nil, fmt.Errorf("starting %s as %s: %w\n--- plugin log ---\n%s", target.Name, role.Cookie, err, log.String())
	}
	dispensed, err := rpcClient.Dispense(role.DispenseName)
	if err != nil {
		client.Kill()
		return nil, fmt.Errorf("dispensing %s from %s: %w\n--- plugin log ---\n%s", role.DispenseName, target.Name, err, log.String())
	}
	return &Session{Client: client, RPC: rpcClient, Dispensed: dispensed, Log: log}, nil
}

// Ping is the controller's per-reconcile health check.
func (s *Session) Ping() error { return s.RPC.Ping() }

// Pid is the plugin's process id.
func (s *Session) Pid() int { return s.Client.ReattachConfig().Pid }

// Process is a plugin started by hand (same argv and environment as go-plugin would use), for
// tests that need the raw connection.
type Process struct {
	Cmd     *exec.Cmd
	Network string
	Addr    string
	Stderr  *SyncBuffer
	done    chan struct{}
	waitErr error
}

// ControllerEnv is the environment go-plugin gives a plugin: the host environment, then the
// cookie and go-plugin's variables.
func ControllerEnv(cookie string) []string {
	return append(os.Environ(),
		CookieKey+"="+cookie,
		"PLUGIN_MIN_PORT=10000",
		"PLUGIN_MAX_PORT=25000",
		"PLUGIN_PROTOCOL_VERSIONS=1",
	)
}

// Spawn execs target with the controller's environment and reads the handshake line.
func Spawn(target Target, role Role, timeout time.Duration) (*Process, error) {
	cmd := target.Cmd()
	cmd.Env = append(ControllerEnv(role.Cookie), target.Env...)
	stderr := &SyncBuffer{}
	cmd.Stderr = stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &Process{Cmd: cmd, Stderr: stderr, done: make(chan struct{})}
	lines := make(chan string, 1)
	go func() {
		scanner := bufio.NewScanner(stdout)
		if scanner.Scan() {
			lines <- scanner.Text()
		}
		close(lines)
		_, _ = io.Copy(io.Discard, stdout) // like go-plugin: later lines are read and discarded
	}()
	go func() {
		p.waitErr = cmd.Wait()
		close(p.done)
	}()
	select {
	case line, ok := <-lines:
		if !ok {
			p.Kill()
			return nil, fmt.Errorf("plugin closed stdout without a handshake line; stderr: %s", stderr.String())
		}
		parts := strings.Split(strings.TrimSpace(line), "|")
		if len(parts) < 5 || parts[0] != "1" || parts[1] != "1" || parts[4] != "netrpc" {
			p.Kill()
			return nil, fmt.Errorf("unexpected handshake line %q", line)
		}
		p.Network, p.Addr = parts[2], parts[3]
		return p, nil
	case <-time.After(timeout):
		p.Kill()
		return nil, fmt.Errorf("no handshake line within %s; stderr: %s", timeout, stderr.String())
	}
}

// Dial connects to the plugin's socket.
func (p *Process) Dial() (net.Conn, error) { return net.Dial(p.Network, p.Addr) }

// Exited waits up to timeout for the process to exit and reports whether it did.
func (p *Process) Exited(timeout time.Duration) bool {
	select {
	case <-p.done:
		return true
	case <-time.After(timeout):
		return false
	}
}

// ExitError is cmd.Wait's result once the process has exited.
func (p *Process) ExitError() error { <-p.done; return p.waitErr }

// Kill force-kills the process (cleanup) and waits for it.
func (p *Process) Kill() {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.Cmd.Process.Kill()
	<-p.done
}
