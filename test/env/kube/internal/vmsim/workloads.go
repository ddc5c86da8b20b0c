package vmsim

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"regexp"
	"sort"
	"strings"
	"syscall"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"
)

func jsonEqual(a, b interface{}) bool {
	ra, _ := json.Marshal(a)
	rb, _ := json.Marshal(b)
	return string(ra) == string(rb)
}

// version resolves an image tag ("v1.151.0-cluster") to a built VictoriaMetrics version.
func (s *Sim) version(tag string) (string, Binaries, error) {
	if tag == "" {
		tag = s.cfg.DefaultVersion
	}
	v := strings.TrimSuffix(strings.TrimSuffix(tag, "-cluster"), "-enterprise")
	if b, ok := s.cfg.Binaries[v]; ok {
		return v, b, nil
	}
	have := make([]string, 0, len(s.cfg.Binaries))
	for k := range s.cfg.Binaries {
		have = append(have, k)
	}
	sort.Strings(have)
	return v, Binaries{}, fmt.Errorf("image tag %q cannot be pulled: the sandbox has VictoriaMetrics %s only", tag, strings.Join(have, ", "))
}

func flagArgs(m map[string]interface{}) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	args := make([]string, 0, len(keys))
	for _, k := range keys {
		args = append(args, fmt.Sprintf("-%s=%v", strings.TrimLeft(k, "-"), m[k]))
	}
	return args
}

// clusterProcess maps a VMCluster to one single-node victoria-metrics process: version from
// spec.clusterVersion (or vmstorage.image.tag), flags from retentionPeriod and the components'
// extraArgs. Debian and the Go module proxy offer no cluster binaries (vminsert/vmselect/vmstorage).
func (s *Sim) clusterProcess(obj *unstructured.Unstructured) (desired, error) {
	ns, name := obj.GetNamespace(), obj.GetName()
	if svc, _, _ := unstructured.NestedString(obj.Object, "spec", "vmselect", "serviceSpec", "metadata", "name"); svc != "" && svc == "vmselect-"+name {
		return desired{invalid: fmt.Errorf(".serviceSpec.Name cannot be equal to prefixed name=%q", svc)}, nil
	}
	tag, _, _ := unstructured.NestedString(obj.Object, "spec", "clusterVersion")
	if t, _, _ := unstructured.NestedString(obj.Object, "spec", "vmstorage", "image", "tag"); t != "" {
		tag = t
	}
	port, err := s.portFor(gvrCluster, ns, name)
	if err != nil {
		return desired{}, err
	}
	version, bin, verr := s.version(tag)
	if verr != nil {
		return desired{port: port, version: version, unavailable: verr}, nil
	}
	dir, err := dataDir(s.cfg.StateDir, "vmcluster", ns, name)
	if err != nil {
		return desired{}, err
	}
	args := append(s.cfg.listenArgs(port), "-storageDataPath="+dir)
	if r, ok, _ := unstructured.NestedFieldNoCopy(obj.Object, "spec", "retentionPeriod"); ok {
		args = append(args, fmt.Sprintf("-retentionPeriod=%v", r))
	}
	merged := map[string]interface{}{}
	for _, component := range []string{"vmstorage", "vmselect", "vminsert"} {
		extra, _, _ := unstructured.NestedMap(obj.Object, "spec", component, "extraArgs")
		for k, v := range extra {
			merged[k] = v
		}
	}
	args = append(args, flagArgs(merged)...)
	return desired{version: version, binary: bin.VictoriaMetrics, args: args, port: port}, nil
}

// singleProcess maps a VMSingle to one victoria-metrics process on spec.port: version from spec.image.tag, flags
// from retentionPeriod and extraArgs, as the operator's Deployment container would run.
func (s *Sim) singleProcess(obj *unstructured.Unstructured) (desired, error) {
	ns, name := obj.GetNamespace(), obj.GetName()
	tag, _, _ := unstructured.NestedString(obj.Object, "spec", "image", "tag")
	port, err := s.portFor(gvrSingle, ns, name)
	if err != nil {
		return desired{}, err
	}
	version, bin, verr := s.version(tag)
	if verr != nil {
		return desired{port: port, version: version, unavailable: verr}, nil
	}
	dir, err := dataDir(s.cfg.StateDir, "vmsingle", ns, name)
	if err != nil {
		return desired{}, err
	}
	args := append(s.cfg.listenArgs(port), "-storageDataPath="+dir)
	if r, ok, _ := unstructured.NestedFieldNoCopy(obj.Object, "spec", "retentionPeriod"); ok {
		args = append(args, fmt.Sprintf("-retentionPeriod=%v", r))
	}
	extra, _, _ := unstructured.NestedMap(obj.Object, "spec", "extraArgs")
	args = append(args, flagArgs(extra)...)
	return desired{version: version, binary: bin.VictoriaMetrics, args: args, port: port}, nil
}

// zoneService is the zone a Service host name stands for: vminsert-/vmselect-<cluster> (a VMCluster),
// vmsingle-<name> (a VMSingle) or vlinsert-/vlselect-/vlstorage-<cluster> (a VLCluster), each in <ns>.svc[.cluster.local].
var serviceHost = regexp.MustCompile(`^(vminsert|vmselect|vmstorage|vmsingle|vlinsert|vlselect|vlstorage)-([a-z0-9-]+)\.([a-z0-9-]+)\.svc(\.cluster\.local)?$`)

func serviceZone(host string) (gvr schema.GroupVersionResource, ns, name string, ok bool) {
	m := serviceHost.FindStringSubmatch(host)
	if m == nil {
		return gvr, "", "", false
	}
	switch m[1] {
	case "vmsingle":
		return gvrSingle, m[3], m[2], true
	case "vlinsert", "vlselect", "vlstorage":
		return gvrVLCluster, m[3], m[2], true
	}
	return gvrCluster, m[3], m[2], true
}

var tenantPath = regexp.MustCompile(`^/(insert|select)/[^/]+`)

// translateURL rewrites a production-shaped in-cluster URL
// (http://vminsert-<cluster>.<ns>.svc:8480/insert/0/prometheus/api/v1/write) to the sandbox
// zone that stands for that VMCluster (http://127.0.0.1:<port>/prometheus/api/v1/write): the
// sandbox has no DNS and its zones are single-node processes.
func (s *Sim) translateURL(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", err
	}
	gvr, ns, name, ok := serviceZone(u.Hostname())
	if !ok {
		return raw, nil
	}
	port, err := s.portFor(gvr, ns, name)
	if err != nil {
		return "", err
	}
	u.Host = fmt.Sprintf("127.0.0.1:%d", port)
	if gvr == gvrCluster {
		u.Path = tenantPath.ReplaceAllString(u.Path, "")
	}
	return u.String(), nil
}

func (s *Sim) agentProcess(obj *unstructured.Unstructured) (desired, error) {
	ns, name := obj.GetNamespace(), obj.GetName()
	port, err := s.portFor(gvrAgent, ns, name)
	if err != nil {
		return desired{}, err
	}
	tag, _, _ := unstructured.NestedString(obj.Object, "spec", "image", "tag")
	version, bin, verr := s.version(tag)
	if verr != nil {
		return desired{port: port, version: version, unavailable: verr}, nil
	}
	dir, err := dataDir(s.cfg.StateDir, "vmagent", ns, name)
	if err != nil {
		return desired{}, err
	}
	args := append(s.cfg.listenArgs(port), "-remoteWrite.tmpDataPath="+dir)
	urls, invalid := s.remoteWriteArgs(obj)
	if invalid != nil {
		return desired{invalid: invalid}, nil
	}
	args = append(args, urls...)
	if s.proxy != nil {
		args = append(args, "-remoteWrite.proxyURL="+s.proxy.url())
	}
	extra, _, _ := unstructured.NestedMap(obj.Object, "spec", "extraArgs")
	args = append(args, flagArgs(extra)...)
	d := desired{version: version, binary: bin.VMAgent, args: args, port: port}
	if !s.cfg.dataPlaneOnly() {
		d.beforeStart = func() error { return s.ensureDeployment(context.Background(), obj, "vmagent", version, port, args) }
	}
	return d, nil
}

// remoteWriteArgs are a VMAgent's or VLAgent's -remoteWrite.url flags: the spec's URLs unchanged and in order (the
// agent names its queue folders <N>_<XXH64(url)> from them), or the spec error the operator would report.
func (s *Sim) remoteWriteArgs(obj *unstructured.Unstructured) ([]string, error) {
	remoteWrites, _, _ := unstructured.NestedSlice(obj.Object, "spec", "remoteWrite")
	if len(remoteWrites) == 0 {
		return nil, fmt.Errorf("spec.remoteWrite must contain at least one url")
	}
	args := make([]string, 0, len(remoteWrites))
	for i, rw := range remoteWrites {
		entry, _ := rw.(map[string]interface{})
		raw, _ := entry["url"].(string)
		if raw == "" {
			return nil, fmt.Errorf("spec.remoteWrite[%d].url is empty", i)
		}
		if _, err := s.translateURL(raw); err != nil {
			return nil, fmt.Errorf("spec.remoteWrite[%d].url: %w", i, err)
		}
		args = append(args, "-remoteWrite.url="+raw)
	}
	return args, nil
}

func (s *Sim) authProcess(obj *unstructured.Unstructured) (desired, error) {
	ns, name := obj.GetNamespace(), obj.GetName()
	port, err := s.portFor(gvrAuth, ns, name)
	if err != nil {
		return desired{}, err
	}
	tag, _, _ := unstructured.NestedString(obj.Object, "spec", "image", "tag")
	version, bin, verr := s.version(tag)
	if verr != nil {
		return desired{port: port, version: version, unavailable: verr}, nil
	}
	dir, err := dataDir(s.cfg.StateDir, "vmauth", ns, name)
	if err != nil {
		return desired{}, err
	}
	configPath := dir + "/config.yaml"
	render := s.renderAuthConfig
	if s.cfg.dataPlaneOnly() {
		render = s.operatorAuthConfig
	}
	rendered, err := render(context.Background(), obj)
	if err != nil {
		return desired{invalid: err}, nil
	}
	key := ns + "/" + name
	write := func() error {
		if err := os.WriteFile(configPath+".tmp", []byte(rendered), 0o644); err != nil {
			return err
		}
		return os.Rename(configPath+".tmp", configPath)
	}
	args := append(s.cfg.listenArgs(port), "-auth.config="+configPath)
	d := desired{version: version, binary: bin.VMAuth, args: args, port: port}
	d.beforeStart = func() error {
		if err := write(); err != nil {
			return err
		}
		s.mu.Lock()
		s.lastAuth[key] = rendered
		s.mu.Unlock()
		if s.cfg.dataPlaneOnly() {
			return nil
		}
		return s.ensureDeployment(context.Background(), obj, "vmauth", version, port, args)
	}
	// A config change reloads the running vmauth (SIGHUP), as the operator's config-reloader does.
	d.onRunning = func(p *process) error {
		s.mu.Lock()
		same := s.lastAuth[key] == rendered
		s.mu.Unlock()
		if same {
			return nil
		}
		if err := write(); err != nil {
			return err
		}
		if err := p.signal(syscall.SIGHUP); err != nil {
			return err
		}
		s.mu.Lock()
		s.lastAuth[key] = rendered
		s.mu.Unlock()
		fmt.Fprintf(os.Stderr, "vmoperator-sim: vmauth %s config reloaded\n", key)
		return nil
	}
	return d, nil
}

// renderAuthConfig renders the vmauth config from the VMUsers the VMAuth selects, in the shape
// the operator renders: one users[] entry per VMUser with a url_map entry per targetRef, and
// unauthorized_user from spec.unauthorizedUserAccessSpec.
func (s *Sim) renderAuthConfig(ctx context.Context, auth *unstructured.Unstructured) (string, error) {
	users, err := s.dyn.Resource(gvrUser).Namespace("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return "", err
	}
	selectAll, _, _ := unstructured.NestedBool(auth.Object, "spec", "selectAllByDefault")
	selector := labels.Nothing()
	if sel, ok, _ := unstructured.NestedMap(auth.Object, "spec", "userSelector"); ok {
		var ls metav1.LabelSelector
		raw, _ := json.Marshal(sel)
		if err := json.Unmarshal(raw, &ls); err != nil {
			return "", fmt.Errorf("spec.userSelector: %w", err)
		}
		if selector, err = metav1.LabelSelectorAsSelector(&ls); err != nil {
			return "", fmt.Errorf("spec.userSelector: %w", err)
		}
	}
	sort.Slice(users.Items, func(i, j int) bool {
		return users.Items[i].GetNamespace()+"/"+users.Items[i].GetName() < users.Items[j].GetNamespace()+"/"+users.Items[j].GetName()
	})
	config := map[string]interface{}{}
	var rendered []interface{}
	for _, u := range users.Items {
		if !selectAll && !selector.Matches(labels.Set(u.GetLabels())) {
			continue
		}
		entry := map[string]interface{}{}
		username, _, _ := unstructured.NestedString(u.Object, "spec", "username")
		if username == "" {
			username = u.GetName()
		}
		if token, _, _ := unstructured.NestedString(u.Object, "spec", "bearerToken"); token != "" {
			entry["bearer_token"] = token
		} else {
			entry["username"] = username
			if pw, _, _ := unstructured.NestedString(u.Object, "spec", "password"); pw != "" {
				entry["password"] = pw
			}
		}
		refs, _, _ := unstructured.NestedSlice(u.Object, "spec", "targetRefs")
		urlMap, err := s.renderTargetRefs(refs, u.GetNamespace())
		if err != nil {
			return "", fmt.Errorf("VMUser %s/%s: %w", u.GetNamespace(), u.GetName(), err)
		}
		entry["url_map"] = urlMap
		rendered = append(rendered, entry)
	}
	if len(rendered) > 0 {
		config["users"] = rendered
	}
	if refs, ok, _ := unstructured.NestedSlice(auth.Object, "spec", "unauthorizedUserAccessSpec", "targetRefs"); ok {
		urlMap, err := s.renderTargetRefs(refs, auth.GetNamespace())
		if err != nil {
			return "", fmt.Errorf("spec.unauthorizedUserAccessSpec: %w", err)
		}
		config["unauthorized_user"] = map[string]interface{}{"url_map": urlMap}
	}
	out, err := yaml.Marshal(config)
	return string(out), err
}

var urlMapCommonKeys = []string{"load_balancing_policy", "retry_status_codes", "drop_src_path_prefix_parts", "headers", "response_headers", "src_query_args", "src_headers", "discover_backend_ips"}

func (s *Sim) renderTargetRefs(refs []interface{}, defaultNamespace string) ([]interface{}, error) {
	var urlMap []interface{}
	for i, r := range refs {
		ref, _ := r.(map[string]interface{})
		var prefixes []string
		dropParts := false
		switch {
		case ref["crd"] != nil:
			crd, _ := ref["crd"].(map[string]interface{})
			kind, _ := crd["kind"].(string)
			var objects []map[string]interface{}
			if n, _ := crd["name"].(string); n != "" {
				objects = append(objects, crd)
			}
			if list, ok := crd["objects"].([]interface{}); ok {
				for _, o := range list {
					if m, ok := o.(map[string]interface{}); ok {
						objects = append(objects, m)
					}
				}
			}
			for _, o := range objects {
				n, _ := o["name"].(string)
				ns, _ := o["namespace"].(string)
				if ns == "" {
					ns = defaultNamespace
				}
				var gvr = gvrAgent
				switch kind {
				case "VMCluster/vmselect", "VMCluster/vminsert":
					gvr = gvrCluster
					dropParts = true
				case "VMAgent":
				default:
					return nil, fmt.Errorf("targetRefs[%d].crd.kind %q is not simulated by the sandbox", i, kind)
				}
				port, err := s.portFor(gvr, ns, n)
				if err != nil {
					return nil, err
				}
				prefixes = append(prefixes, fmt.Sprintf("http://127.0.0.1:%d", port))
			}
		case ref["static"] != nil:
			static, _ := ref["static"].(map[string]interface{})
			var raws []string
			if u, _ := static["url"].(string); u != "" {
				raws = append(raws, u)
			}
			if list, ok := static["urls"].([]interface{}); ok {
				for _, u := range list {
					if str, ok := u.(string); ok {
						raws = append(raws, str)
					}
				}
			}
			for _, raw := range raws {
				t, err := s.translateURL(raw)
				if err != nil {
					return nil, fmt.Errorf("targetRefs[%d].static: %w", i, err)
				}
				prefixes = append(prefixes, strings.TrimRight(t, "/"))
			}
		default:
			return nil, fmt.Errorf("targetRefs[%d] needs crd or static", i)
		}
		if suffix, _ := ref["target_path_suffix"].(string); suffix != "" {
			for j := range prefixes {
				prefixes[j] += suffix
			}
		}
		entry := map[string]interface{}{"url_prefix": prefixes}
		paths, _ := ref["paths"].([]interface{})
		if len(paths) == 0 {
			paths = []interface{}{"/.*"}
		}
		entry["src_paths"] = paths
		for _, k := range urlMapCommonKeys {
			if v, ok := ref[k]; ok {
				entry[k] = v
			}
		}
		// /select/<tenant>/prometheus/... -> /prometheus/...: the zone is a single-node process.
		if _, set := entry["drop_src_path_prefix_parts"]; dropParts && !set {
			entry["drop_src_path_prefix_parts"] = 2
		}
		urlMap = append(urlMap, entry)
	}
	return urlMap, nil
}

// ensureDeployment creates or updates the Deployment the operator would own for a vmagent or
// vmauth, so the component has real Pods (made Ready by the simulated kubelet's readiness probe
// against the real process) that a client can discover and scrape at podIP:<port named http>.
func (s *Sim) ensureDeployment(ctx context.Context, owner *unstructured.Unstructured, component, version string, port int, args []string) error {
	name := component + "-" + owner.GetName()
	selector := map[string]string{
		"app.kubernetes.io/name":      component,
		"app.kubernetes.io/instance":  owner.GetName(),
		"app.kubernetes.io/component": "monitoring",
		"managed-by":                  "vm-operator",
	}
	replicas, found, _ := unstructured.NestedInt64(owner.Object, "spec", "replicaCount")
	if !found {
		replicas = 1
	}
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: owner.GetNamespace(), Labels: selector,
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: owner.GetAPIVersion(), Kind: owner.GetKind(), Name: owner.GetName(), UID: owner.GetUID(),
				Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
			}},
		},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(int32(replicas)),
			Selector: &metav1.LabelSelector{MatchLabels: selector},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: selector},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name:  component,
					Image: "victoriametrics/" + component + ":" + version,
					Args:  args,
					Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: int32(port), Protocol: corev1.ProtocolTCP}},
					ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
						Host: "127.0.0.1", Port: intstr.FromString("http"), Path: "/health",
					}}},
				}}},
			},
		},
	}
	deployments := s.kube.AppsV1().Deployments(owner.GetNamespace())
	existing, err := deployments.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		_, err = deployments.Create(ctx, dep, metav1.CreateOptions{FieldManager: "vm-operator"})
		return err
	}
	if err != nil {
		return err
	}
	existing.Spec = dep.Spec
	existing.Labels = dep.Labels
	_, err = deployments.Update(ctx, existing, metav1.UpdateOptions{FieldManager: "vm-operator"})
	return err
}
