package vmsim

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"sort"
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
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("allocate port for %s: %w", key, err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	p.byKey[key] = port
	return port, nil
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
