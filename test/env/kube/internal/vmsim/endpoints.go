package vmsim

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// Endpoint is what the simulator publishes about one running component.
type Endpoint struct {
	Kind    string   `json:"kind"`
	Key     string   `json:"key"` // namespace/name of the custom resource
	URL     string   `json:"url"`
	Version string   `json:"version"`
	PID     int      `json:"pid"`
	LogPath string   `json:"logPath"`
	Args    []string `json:"args"`
}

// ports hands out loopback ports, stable per object for the simulator's lifetime, so a zone
// keeps its address across restarts (like a Service) and a vmagent URL can name a zone before
// the zone exists.
type ports struct {
	mu    sync.Mutex
	byKey map[string]int
}

func (p *ports) get(key string) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if port, ok := p.byKey[key]; ok {
		return port, nil
	}
	port, err := portBelowEphemeralRange()
	if err != nil {
		return 0, fmt.Errorf("allocate port for %s: %w", key, err)
	}
	p.byKey[key] = port
	return port, nil
}

// portBelowEphemeralRange picks a free loopback port below the kernel's ephemeral range. A zone keeps its port
// across restarts; a port from the ephemeral range (listen on :0) can be taken by any outgoing connection while
// the zone's process is down, and the restarted process then fails with "address already in use".
func portBelowEphemeralRange() (int, error) {
	low := 32768
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if fields := strings.Fields(string(b)); len(fields) == 2 {
			if v, err := strconv.Atoi(fields[0]); err == nil && v > 11000 {
				low = v
			}
		}
	}
	const min = 10000
	for range 500 {
		port := min + rand.IntN(low-min)
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			continue
		}
		_ = l.Close()
		return port, nil
	}
	return 0, fmt.Errorf("no free loopback port in [%d, %d)", min, low)
}

type endpoints struct {
	mu    sync.Mutex
	path  string
	items map[string]Endpoint
}

func (e *endpoints) set(ep Endpoint) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.items[ep.Kind+"/"+ep.Key] = ep
	e.flush()
}

func (e *endpoints) flush() {
	if e.path == "" {
		return
	}
	keys := make([]string, 0, len(e.items))
	for k := range e.items {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	list := make([]Endpoint, 0, len(keys))
	for _, k := range keys {
		list = append(list, e.items[k])
	}
	raw, _ := json.MarshalIndent(map[string]any{"endpoints": list}, "", "  ")
	tmp := e.path + ".tmp"
	if err := os.WriteFile(tmp, raw, 0o644); err == nil {
		_ = os.Rename(tmp, e.path)
	}
}
