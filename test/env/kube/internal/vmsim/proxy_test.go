package vmsim

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
)

// zoneServer stands for a zone's process: it answers 204 and records the path it was asked for.
func zoneServer(t *testing.T) (int, *string) {
	gotPath := new(string)
	zone := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		*gotPath = r.URL.Path
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(zone.Close)
	port, _ := strconv.Atoi(zone.URL[strings.LastIndex(zone.URL, ":")+1:])
	return port, gotPath
}

func TestServiceProxyForwardsToTheZoneAndDropsWhenItIsDown(t *testing.T) {
	zonePort, gotPath := zoneServer(t)
	free, _ := net.Listen("tcp", "127.0.0.1:0")
	downPort := free.Addr().(*net.TCPAddr).Port
	_ = free.Close()

	s := &Sim{ports: &ports{byKey: map[string]int{"vmclusters/vm/vm-zone-a": zonePort, "vmclusters/vm/vm-zone-b": downPort}}}
	proxy, err := s.startProxy()
	if err != nil {
		t.Fatal(err)
	}
	proxyURL, _ := url.Parse(proxy.url())
	client := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(proxyURL)}}

	resp, err := client.Post("http://vminsert-vm-zone-a.vm.svc:8480/insert/0/prometheus/api/v1/write", "application/x-protobuf", strings.NewReader("x"))
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent || *gotPath != "/prometheus/api/v1/write" {
		t.Fatalf("forwarded status %d path %q, want 204 /prometheus/api/v1/write", resp.StatusCode, *gotPath)
	}

	if resp, err := client.Post("http://vminsert-vm-zone-b.vm.svc:8480/insert/0/prometheus/api/v1/write", "application/x-protobuf", strings.NewReader("x")); err == nil {
		_ = resp.Body.Close()
		t.Fatalf("a down zone must drop the connection, got HTTP %d", resp.StatusCode)
	}

	resp, err = client.Get("http://example.org/anything")
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusBadGateway {
		t.Fatalf("unknown host: status %d, want 502", resp.StatusCode)
	}
}

func TestPublishedServiceReachesTheZoneAndTheProxyPassesLoopbackThrough(t *testing.T) {
	zonePort, gotPath := zoneServer(t)
	free, _ := net.Listen("tcp", "127.0.0.2:0")
	address := free.Addr().String()
	_ = free.Close()

	s := &Sim{
		cfg:       &Config{Publish: []Published{{Address: address, Service: "vminsert-vm-zone-b.vm.svc:8480"}}},
		ports:     &ports{byKey: map[string]int{"vmclusters/vm/vm-zone-b": zonePort}},
		endpoints: &endpoints{items: map[string]Endpoint{}},
	}
	if err := s.startPublished(); err != nil {
		t.Fatal(err)
	}
	// The hub's service proxy sends a loopback address on unchanged, to the other cluster's published Service.
	hub := &Sim{ports: &ports{byKey: map[string]int{}}}
	proxy, err := hub.startProxy()
	if err != nil {
		t.Fatal(err)
	}
	proxyURL, _ := url.Parse(proxy.url())
	client := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(proxyURL)}}
	resp, err := client.Post("http://"+address+"/insert/0/prometheus/api/v1/write", "application/x-protobuf", strings.NewReader("x"))
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent || *gotPath != "/prometheus/api/v1/write" {
		t.Fatalf("published: status %d path %q, want 204 /prometheus/api/v1/write", resp.StatusCode, *gotPath)
	}
}
