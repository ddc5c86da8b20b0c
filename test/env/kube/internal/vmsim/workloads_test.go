package vmsim

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

func newTestSim() *Sim {
	return &Sim{
		cfg:   &Config{DefaultVersion: "v1.151.0", Binaries: map[string]Binaries{"v1.151.0": {}, "v1.79.5": {}}},
		ports: &ports{byKey: map[string]int{"vmclusters/vm/vm-zone-a": 10001, "vmclusters/vm/vm-zone-b": 10002, "vmagents/vm/vmagent": 10003}},
	}
}

func TestTranslateURLMapsServiceToZone(t *testing.T) {
	s := newTestSim()
	cases := map[string]string{
		"http://vminsert-vm-zone-a.vm.svc:8480/insert/0/prometheus/api/v1/write":                 "http://127.0.0.1:10001/prometheus/api/v1/write",
		"http://vmselect-vm-zone-b.vm.svc.cluster.local:8481/select/0:1/prometheus/api/v1/query": "http://127.0.0.1:10002/prometheus/api/v1/query",
		"http://example.org:9999/api/v1/write":                                                   "http://example.org:9999/api/v1/write",
	}
	for in, want := range cases {
		got, err := s.translateURL(in)
		if err != nil || got != want {
			t.Errorf("translateURL(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}

func TestVersionResolvesClusterTagsAndRejectsUnknown(t *testing.T) {
	s := newTestSim()
	if v, _, err := s.version("v1.79.5-cluster"); err != nil || v != "v1.79.5" {
		t.Fatalf("version(v1.79.5-cluster) = %q, %v", v, err)
	}
	if v, _, err := s.version(""); err != nil || v != "v1.151.0" {
		t.Fatalf("empty tag should mean the default version, got %q, %v", v, err)
	}
	if _, _, err := s.version("v9.9.9-cluster"); err == nil || !strings.Contains(err.Error(), "cannot be pulled") {
		t.Fatalf("unknown version must be unavailable, got %v", err)
	}
}

func TestRenderTargetRefsLikeTheOperator(t *testing.T) {
	s := newTestSim()
	var refs []interface{}
	doc := `
- crd: {kind: VMCluster/vmselect, name: "", namespace: "", objects: [{name: vm-zone-a, namespace: vm}, {name: vm-zone-b, namespace: vm}]}
  paths: ["/select/.*"]
  load_balancing_policy: first_available
- static: {url: "http://vmselect-vm-zone-b.vm.svc:8481"}
  target_path_suffix: /prometheus
`
	if err := yaml.Unmarshal([]byte(doc), &refs); err != nil {
		t.Fatal(err)
	}
	urlMap, err := s.renderTargetRefs(refs, "vm")
	if err != nil {
		t.Fatal(err)
	}
	out, _ := yaml.Marshal(urlMap)
	want := `- drop_src_path_prefix_parts: 2
  load_balancing_policy: first_available
  src_paths:
  - /select/.*
  url_prefix:
  - http://127.0.0.1:10001
  - http://127.0.0.1:10002
- src_paths:
  - /.*
  url_prefix:
  - http://127.0.0.1:10002/prometheus
`
	if string(out) != want {
		t.Fatalf("rendered url_map:\n%s\nwant:\n%s", out, want)
	}
}

func TestFlagArgsAreSortedAndPrefixed(t *testing.T) {
	got := flagArgs(map[string]interface{}{"search.latencyOffset": "5s", "-dedup.minScrapeInterval": "1s"})
	want := []string{"-dedup.minScrapeInterval=1s", "-search.latencyOffset=5s"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("flagArgs = %v, want %v", got, want)
	}
}

func TestInvalidServiceNameFailsWithoutTouchingTheZone(t *testing.T) {
	s := newTestSim()
	obj := &unstructured.Unstructured{Object: map[string]interface{}{
		"metadata": map[string]interface{}{"name": "vm-zone-a", "namespace": "vm"},
		"spec": map[string]interface{}{"vmselect": map[string]interface{}{
			"serviceSpec": map[string]interface{}{"metadata": map[string]interface{}{"name": "vmselect-vm-zone-a"}},
		}},
	}}
	d, err := s.clusterProcess(obj)
	if err != nil || d.invalid == nil || !strings.Contains(d.invalid.Error(), "serviceSpec") {
		t.Fatalf("want an invalid-spec error, got %+v, %v", d, err)
	}
}

func TestLocalizeOperatorConfig(t *testing.T) {
	s := newTestSim()
	var config interface{}
	doc := `
users:
- username: vmzones-read
  password: sandbox
  url_map:
  - src_paths: ["/select/.*"]
    url_prefix: ["http://vmselect-vm-zone-a.vm.svc:10001", "http://vmselect-vm-zone-b.vm.svc.cluster.local:10002"]
- username: agent
  url_prefix: http://vmagent-vmagent.vm.svc:10003
`
	if err := yaml.Unmarshal([]byte(doc), &config); err != nil {
		t.Fatal(err)
	}
	if err := s.localizeURLs(config); err != nil {
		t.Fatal(err)
	}
	out, _ := yaml.Marshal(config)
	want := `users:
- password: sandbox
  url_map:
  - drop_src_path_prefix_parts: 2
    src_paths:
    - /select/.*
    url_prefix:
    - http://127.0.0.1:10001
    - http://127.0.0.1:10002
  username: vmzones-read
- url_prefix: http://127.0.0.1:10003
  username: agent
`
	if string(out) != want {
		t.Fatalf("localized:\n%s\nwant:\n%s", out, want)
	}
}

func TestVLClusterServicesAndProcess(t *testing.T) {
	s := newTestSim()
	s.ports.byKey["vlclusters/vm/vm-zone-a"] = 10011
	s.cfg.StateDir = t.TempDir()
	s.cfg.DefaultLogsVersion = "v1.52.1"
	s.cfg.LogsBinaries = map[string]LogsBinaries{"v1.52.1": {VictoriaLogs: "/bin/victoria-logs"}}
	for in, want := range map[string]string{
		"http://vlinsert-vm-zone-a.vm.svc:9481/internal/insert?version=v1": "http://127.0.0.1:10011/internal/insert?version=v1",
		"http://vlselect-vm-zone-a.vm.svc:9471/select/logsql/query":        "http://127.0.0.1:10011/select/logsql/query",
	} {
		if got, err := s.translateURL(in); err != nil || got != want {
			t.Errorf("translateURL(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	var obj unstructured.Unstructured
	if err := yaml.Unmarshal([]byte(`
apiVersion: operator.victoriametrics.com/v1
kind: VLCluster
metadata: {name: vm-zone-a, namespace: vm}
spec:
  clusterVersion: v1.52.1
  vlstorage: {retentionPeriod: 2d, extraArgs: {search.maxQueryDuration: 40s}}
  vlselect: {extraArgs: {search.maxConcurrentRequests: "8"}}
`), &obj.Object); err != nil {
		t.Fatal(err)
	}
	d, err := s.vlclusterProcess(&obj)
	if err != nil || d.binary != "/bin/victoria-logs" || d.port != 10011 {
		t.Fatalf("vlclusterProcess = %+v, %v", d, err)
	}
	got := strings.Join(d.args[2:], " ")
	if want := "-retentionPeriod=2d -search.maxConcurrentRequests=8 -search.maxQueryDuration=40s"; got != want {
		t.Errorf("flags %q, want %q", got, want)
	}
	obj.Object["spec"].(map[string]interface{})["clusterVersion"] = "v9.9.9"
	if d, _ := s.vlclusterProcess(&obj); d.unavailable == nil {
		t.Errorf("an unknown VictoriaLogs version must be unavailable")
	}
}
