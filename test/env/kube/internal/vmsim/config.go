// Package vmsim is the sandbox's simulated VictoriaMetrics operator. It reconciles VMCluster,
// VMAgent, VMAuth and VMUser objects with the operator's status semantics
// (status.updateStatus expanding -> operational | failed, status.observedGeneration,
// status.reason, status.lastAppliedSpec) and drives a real data plane on loopback: one real
// single-node VictoriaMetrics process per VMCluster (standing in for vminsert+vmselect+vmstorage),
// real vmagent processes and a real vmauth whose config it renders from VMAuth/VMUser objects.
package vmsim

import (
	"encoding/json"
	"fmt"
	"os"
	"time"
)

// Config is written by the sandbox orchestrator (test/sandbox) before the simulator starts.
type Config struct {
	StateDir string `json:"stateDir"` // data dirs live here
	LogDir   string `json:"logDir"`
	// Binaries maps a VictoriaMetrics version ("v1.151.0") to the built binaries of that version.
	Binaries       map[string]Binaries `json:"binaries"`
	DefaultVersion string              `json:"defaultVersion"`
	// LogsBinaries maps a VictoriaLogs version ("v1.52.1") to its built victoria-logs and vlagent (logs.go).
	LogsBinaries       map[string]LogsBinaries `json:"logsBinaries"`
	DefaultLogsVersion string                  `json:"defaultLogsVersion"`
	// ReadyTimeoutSeconds bounds the wait for a restarted process to become healthy before the
	// object goes "failed" (the operator's VM_PODWAITREADYTIMEOUT, 80 s by default).
	ReadyTimeoutSeconds int `json:"readyTimeoutSeconds"`
	// PodRestartSeconds is the pause between stopping a zone's old process and starting the new
	// one: the time a real pod needs to terminate, be rescheduled, pull and start.
	PodRestartSeconds float64 `json:"podRestartSeconds"`
	// EndpointsFile is rewritten whenever a process (re)starts, so tests find every endpoint.
	EndpointsFile string `json:"endpointsFile"`
	// Mode "operator" (default) simulates the operator: statuses, Deployments, vmauth config.
	// Mode "dataplane" runs next to the real operator: it only runs the real processes the
	// objects ask for and feeds vmauth the config the operator rendered.
	Mode string `json:"mode"`
	// Publish puts Services of this cluster on loopback addresses (published.go): the sandbox's stand-in for
	// the LoadBalancer Services or Ingresses through which another cluster reaches a zone's vminsert and vmselect.
	Publish []Published `json:"publish"`
	// PodIP is the address this cluster's simulated kubelet reports for every Pod (its --pod-ip), and PodNetns the
	// network namespace it lives in (/run/netns/<name>, made by test/sandbox/pod-network.ts): every process's port
	// is forwarded from PodIP inside that namespace to the process on loopback (podnet.go), so that a Pod's IP
	// reaches the process it stands for, as kube-apiserver's pod proxy needs (it refuses loopback). Empty: loopback
	// only. A PodIP without PodNetns is refused: the data plane listens nowhere outside loopback and the namespace.
	PodIP    string `json:"podIP"`
	PodNetns string `json:"podNetns"`
}

// Published is one Service on one address: requests to Address go to Service (e.g.
// "vminsert-vm-zone-b.vm.svc:8480"), as they would through a LoadBalancer Service in front of it.
type Published struct {
	Address string `json:"address"`
	Service string `json:"service"`
}

// listenArgs are a process's -httpListenAddr flags: loopback only (where the simulator and the other processes
// reach it); the Pod IP reaches it through the pod network forwarder (podnet.go).
func (c *Config) listenArgs(port int) []string {
	return []string{fmt.Sprintf("-httpListenAddr=127.0.0.1:%d", port)}
}

func (c *Config) dataPlaneOnly() bool { return c.Mode == "dataplane" }

type Binaries struct {
	VictoriaMetrics string `json:"victoriaMetrics"`
	VMAgent         string `json:"vmagent"`
	VMAuth          string `json:"vmauth"`
}

type LogsBinaries struct {
	VictoriaLogs string `json:"victoriaLogs"`
	VLAgent      string `json:"vlagent"`
}

func LoadConfig(path string) (*Config, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var cfg Config
	if err := json.Unmarshal(raw, &cfg); err != nil {
		return nil, fmt.Errorf("parse %s: %w", path, err)
	}
	if cfg.ReadyTimeoutSeconds <= 0 {
		cfg.ReadyTimeoutSeconds = 80
	}
	if (cfg.PodIP == "") != (cfg.PodNetns == "") {
		return nil, fmt.Errorf("%s: podIP and podNetns go together (the Pod IP exists only inside the namespace)", path)
	}
	if _, ok := cfg.Binaries[cfg.DefaultVersion]; !ok {
		return nil, fmt.Errorf("defaultVersion %q has no binaries", cfg.DefaultVersion)
	}
	return &cfg, nil
}

func (c *Config) readyTimeout() time.Duration {
	return time.Duration(c.ReadyTimeoutSeconds) * time.Second
}

func (c *Config) podRestart() time.Duration {
	return time.Duration(c.PodRestartSeconds * float64(time.Second))
}
