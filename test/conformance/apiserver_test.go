package conformance_test

// A FIXTURE, not a Kubernetes API server: the two read paths gate vmclusterReady uses (discovery of
// operator.victoriametrics.com/v1beta1 and GET of one VMCluster), over TLS on loopback, so
// that the product's real reading path can be checked without a cluster. The sandbox suites test
// the same gate against the real kube-apiserver and operator (test/e2e/gates).

import (
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

type fakeAPIServer struct {
	server *httptest.Server
	mu     sync.Mutex
	object map[string]any // path -> VMCluster
	gets   map[string]int
}

const vmGroupVersion = "/apis/operator.victoriametrics.com/v1beta1"

func newFakeAPIServer(t *testing.T) *fakeAPIServer {
	t.Helper()
	f := &fakeAPIServer{object: map[string]any{}, gets: map[string]int{}}
	f.server = httptest.NewTLSServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.server.Close)
	return f
}

func (f *fakeAPIServer) serve(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	if r.Method != http.MethodGet {
		w.WriteHeader(http.StatusMethodNotAllowed)
		_, _ = fmt.Fprintf(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"MethodNotAllowed","code":405,"message":"fixture serves GET only, got %s"}`, r.Method)
		return
	}
	f.gets[r.URL.Path]++
	if r.URL.Path == vmGroupVersion {
		_ = json.NewEncoder(w).Encode(map[string]any{
			"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": "operator.victoriametrics.com/v1beta1",
			"resources": []map[string]any{{"name": "vmclusters", "singularName": "vmcluster", "namespaced": true, "kind": "VMCluster", "verbs": []string{"get", "list", "watch", "patch"}}},
		})
		return
	}
	if object, ok := f.object[r.URL.Path]; ok {
		_ = json.NewEncoder(w).Encode(object)
		return
	}
	w.WriteHeader(http.StatusNotFound)
	_, _ = fmt.Fprintf(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404,"message":"%s not found"}`, strings.TrimPrefix(r.URL.Path, "/"))
}

// SetVMCluster serves a VMCluster with the given generation and status.
func (f *fakeAPIServer) SetVMCluster(namespace, name string, generation, observed int, updateStatus, reason string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.object[vmGroupVersion+"/namespaces/"+namespace+"/vmclusters/"+name] = map[string]any{
		"apiVersion": "operator.victoriametrics.com/v1beta1", "kind": "VMCluster",
		"metadata": map[string]any{"name": name, "namespace": namespace, "generation": generation, "resourceVersion": fmt.Sprint(100 + generation), "uid": "6c1b2f0e-0000-4000-8000-000000000001"},
		"spec":     map[string]any{"clusterVersion": "v1.151.0-cluster"},
		"status":   map[string]any{"updateStatus": updateStatus, "observedGeneration": observed, "reason": reason},
	}
}

// Gets counts the GET requests for path.
func (f *fakeAPIServer) Gets(path string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.gets[path]
}

// Kubeconfig writes a kubeconfig that points at the fixture.
func (f *fakeAPIServer) Kubeconfig(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: f.server.Certificate().Raw})
	config := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: fixture, cluster: {server: %q, certificate-authority-data: %s}}]
users: [{name: fixture, user: {token: fixture-token}}]
contexts: [{name: fixture, context: {cluster: fixture, user: fixture}}]
current-context: fixture
`, f.server.URL, base64.StdEncoding.EncodeToString(ca))
	if err := os.WriteFile(path, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
