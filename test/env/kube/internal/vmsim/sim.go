package vmsim

import (
	"context"
	"fmt"
	"log"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
)

const group = "operator.victoriametrics.com"

var (
	gvrCluster = schema.GroupVersionResource{Group: group, Version: "v1beta1", Resource: "vmclusters"}
	gvrSingle  = schema.GroupVersionResource{Group: group, Version: "v1beta1", Resource: "vmsingles"}
	gvrAgent   = schema.GroupVersionResource{Group: group, Version: "v1beta1", Resource: "vmagents"}
	gvrAuth    = schema.GroupVersionResource{Group: group, Version: "v1beta1", Resource: "vmauths"}
	gvrUser    = schema.GroupVersionResource{Group: group, Version: "v1beta1", Resource: "vmusers"}
)

const (
	statusExpanding   = "expanding"
	statusOperational = "operational"
	statusFailed      = "failed"
	statusPaused      = "paused"
)

type item struct {
	gvr schema.GroupVersionResource
	key string // namespace/name
}

type Sim struct {
	cfg       *Config
	dyn       dynamic.Interface
	kube      kubernetes.Interface
	queue     workqueue.TypedRateLimitingInterface[item]
	ports     *ports
	endpoints *endpoints

	proxy *serviceProxy
	// podNet forwards the Pod IP inside the pod network namespace to the processes (nil without Config.PodIP).
	podNet *podNetwork

	mu        sync.Mutex
	processes map[string]*process // kind/key -> process
	lastAuth  map[string]string   // vmauth key -> rendered config
}

func New(cfg *Config, dyn dynamic.Interface, kube kubernetes.Interface) *Sim {
	var podNet *podNetwork
	if cfg.PodIP != "" {
		podNet = &podNetwork{netns: cfg.PodNetns, ip: cfg.PodIP, listening: map[int]net.Listener{}}
	}
	return &Sim{
		podNet:    podNet,
		cfg:       cfg,
		dyn:       dyn,
		kube:      kube,
		queue:     workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[item]()),
		ports:     &ports{byKey: map[string]int{}},
		endpoints: &endpoints{path: cfg.EndpointsFile, items: map[string]Endpoint{}},
		processes: map[string]*process{},
		lastAuth:  map[string]string{},
	}
}

func (s *Sim) Run(ctx context.Context) error {
	proxy, err := s.startProxy()
	if err != nil {
		return err
	}
	s.proxy = proxy
	s.endpoints.set(Endpoint{Kind: "ServiceProxy", Key: "sandbox", URL: proxy.url()})
	if err := s.startPublished(); err != nil {
		return err
	}
	factory := dynamicinformer.NewDynamicSharedInformerFactory(s.dyn, 0)
	for _, gvr := range s.watched() {
		gvr := gvr
		enqueue := func(obj interface{}) {
			key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
			if err != nil {
				return
			}
			if gvr == gvrUser {
				s.enqueueAll(factory, gvrAuth)
				s.queue.Add(item{gvrUser, key})
				return
			}
			s.queue.Add(item{gvr, key})
		}
		if _, err := factory.ForResource(gvr).Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    enqueue,
			UpdateFunc: func(_, obj interface{}) { enqueue(obj) },
			DeleteFunc: enqueue,
		}); err != nil {
			return err
		}
	}
	if s.cfg.dataPlaneOnly() {
		// A replaced vmstorage (or vmsingle) Pod restarts its zone's process.
		pods := schema.GroupVersionResource{Version: "v1", Resource: "pods"}
		onPod := func(obj interface{}) {
			pod, ok := obj.(*unstructured.Unstructured)
			if !ok {
				return
			}
			key := pod.GetNamespace() + "/" + pod.GetLabels()["app.kubernetes.io/instance"]
			switch pod.GetLabels()["app.kubernetes.io/name"] {
			case "vmstorage":
				s.queue.Add(item{gvrCluster, key})
			case "vmsingle":
				s.queue.Add(item{gvrSingle, key})
			case "vlstorage":
				s.queue.Add(item{gvrVLCluster, key})
			}
		}
		if _, err := factory.ForResource(pods).Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    onPod,
			UpdateFunc: func(_, obj interface{}) { onPod(obj) },
		}); err != nil {
			return err
		}
		// The operator renders vmauth's config into Secret vmauth-config-<name>: follow it.
		secrets := schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
		onSecret := func(obj interface{}) {
			key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
			if err != nil {
				return
			}
			ns, name, _ := cache.SplitMetaNamespaceKey(key)
			if auth, ok := strings.CutPrefix(name, "vmauth-config-"); ok {
				s.queue.Add(item{gvrAuth, ns + "/" + auth})
			}
		}
		if _, err := factory.ForResource(secrets).Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    onSecret,
			UpdateFunc: func(_, obj interface{}) { onSecret(obj) },
		}); err != nil {
			return err
		}
	}
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	for i := 0; i < 8; i++ {
		go s.worker(ctx)
	}
	// Periodic resync notices a process that died on its own, as the operator notices a pod.
	go func() {
		ticker := time.NewTicker(15 * time.Second)
		defer ticker.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-ticker.C:
				for _, gvr := range s.watched() {
					if gvr != gvrUser {
						s.enqueueAll(factory, gvr)
					}
				}
			}
		}
	}()
	log.Printf("vmoperator-sim: watching %v", s.watched())
	<-ctx.Done()
	s.queue.ShutDown()
	s.stopAll()
	return nil
}

// watched are the kinds the fixture follows; VMSingle, VLCluster and VLAgent only beside the real operator (which
// reconciles them; the simulated operator installs the CRDs of the four kinds it serves only).
func (s *Sim) watched() []schema.GroupVersionResource {
	kinds := []schema.GroupVersionResource{gvrCluster, gvrAgent, gvrAuth, gvrUser}
	if s.cfg.dataPlaneOnly() {
		kinds = append(kinds, gvrSingle, gvrVLCluster, gvrVLAgent)
	}
	return kinds
}

func (s *Sim) enqueueAll(factory dynamicinformer.DynamicSharedInformerFactory, gvr schema.GroupVersionResource) {
	for _, key := range factory.ForResource(gvr).Informer().GetStore().ListKeys() {
		s.queue.Add(item{gvr, key})
	}
}

func (s *Sim) worker(ctx context.Context) {
	for {
		it, shutdown := s.queue.Get()
		if shutdown {
			return
		}
		requeue, err := s.reconcile(ctx, it)
		switch {
		case err != nil:
			log.Printf("vmoperator-sim: %s %s: %v", it.gvr.Resource, it.key, err)
			s.queue.AddRateLimited(it)
		case requeue > 0:
			s.queue.Forget(it)
			s.queue.AddAfter(it, requeue)
		default:
			s.queue.Forget(it)
		}
		s.queue.Done(it)
	}
}

func (s *Sim) reconcile(ctx context.Context, it item) (time.Duration, error) {
	ns, name, _ := cache.SplitMetaNamespaceKey(it.key)
	obj, err := s.dyn.Resource(it.gvr).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		s.stopProcess(it.gvr.Resource + "/" + it.key)
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	if s.cfg.dataPlaneOnly() && it.gvr == gvrUser {
		return 0, nil
	}
	switch it.gvr {
	case gvrCluster:
		return s.reconcileWorkload(ctx, it.gvr, obj, s.clusterProcess)
	case gvrSingle:
		return s.reconcileWorkload(ctx, it.gvr, obj, s.singleProcess)
	case gvrAgent:
		return s.reconcileWorkload(ctx, it.gvr, obj, s.agentProcess)
	case gvrAuth:
		return s.reconcileWorkload(ctx, it.gvr, obj, s.authProcess)
	case gvrVLCluster:
		return s.reconcileWorkload(ctx, it.gvr, obj, s.vlclusterProcess)
	case gvrVLAgent:
		return s.reconcileWorkload(ctx, it.gvr, obj, s.vlagentProcess)
	case gvrUser:
		return 0, s.setStatus(ctx, it.gvr, obj, statusOperational, "", false)
	}
	return 0, nil
}

// desired is the process an object asks for, or the error that makes the object "failed".
type desired struct {
	version string
	binary  string
	args    []string
	port    int
	// beforeStart runs (e.g. writes a config file) before the process is (re)started; onRunning
	// runs when the process is already running with the same args (e.g. a config reload).
	beforeStart func() error
	onRunning   func(p *process) error
	// podUID is the operator Pod a zone process is started for (data-plane mode).
	podUID string
	// invalid is a spec error the operator reports without touching the workload.
	invalid error
	// unavailable means the workload cannot start (missing image): the old process is stopped
	// and the object goes failed after the ready timeout, as with a pod that never gets Ready.
	unavailable error
}

type desiredFunc func(obj *unstructured.Unstructured) (desired, error)

// reconcileWorkload follows the operator's reconcileAndTrackStatus: a spec that differs from
// status.lastAppliedSpec sets "expanding" (observedGeneration = generation, reason cleared)
// before the workload changes; success sets "operational"; an error sets "failed" with reason.
func (s *Sim) reconcileWorkload(ctx context.Context, gvr schema.GroupVersionResource, obj *unstructured.Unstructured, want desiredFunc) (time.Duration, error) {
	if s.cfg.dataPlaneOnly() {
		return s.reconcileProcess(ctx, gvr, obj, want)
	}
	spec, _, _ := unstructured.NestedMap(obj.Object, "spec")
	if paused, _, _ := unstructured.NestedBool(obj.Object, "spec", "paused"); paused {
		return 0, s.setStatus(ctx, gvr, obj, statusPaused, "", false)
	}
	lastApplied, hasLast, _ := unstructured.NestedMap(obj.Object, "status", "lastAppliedSpec")
	specChanged := !hasLast || !jsonEqual(spec, lastApplied)
	current, _, _ := unstructured.NestedString(obj.Object, "status", "updateStatus")
	d, err := want(obj)
	if err != nil {
		return 0, err
	}
	procKey := gvr.Resource + "/" + obj.GetNamespace() + "/" + obj.GetName()
	if d.invalid != nil {
		return 0, s.setStatus(ctx, gvr, obj, statusFailed, d.invalid.Error(), true)
	}
	p := s.process(procKey)
	sameProcess := p != nil && p.running() && p.binary == d.binary && strings.Join(p.args, "\x00") == strings.Join(d.args, "\x00")
	if !specChanged && sameProcess && current == statusOperational {
		if d.onRunning != nil {
			return 0, d.onRunning(p)
		}
		return 0, nil
	}
	if specChanged {
		if err := s.setStatus(ctx, gvr, obj, statusExpanding, "", true); err != nil {
			return 0, err
		}
		log.Printf("vmoperator-sim: %s %s/%s has changes with previous state, applying changes", gvr.Resource, obj.GetNamespace(), obj.GetName())
	}
	if sameProcess {
		if d.onRunning != nil {
			if err := d.onRunning(p); err != nil {
				return 0, err
			}
		}
	} else if err := s.restart(ctx, gvr, obj, procKey, d); err != nil {
		log.Printf("vmoperator-sim: %s %s/%s failed: %v", gvr.Resource, obj.GetNamespace(), obj.GetName(), err)
		if serr := s.setStatus(ctx, gvr, obj, statusFailed, err.Error(), false); serr != nil {
			return 0, serr
		}
		return 30 * time.Second, nil
	}
	return 0, s.setStatus(ctx, gvr, obj, statusOperational, "", false)
}

// reconcileProcess is the data-plane-only reconcile: the real operator owns statuses and
// workloads; this only keeps the object's real process in line with its spec.
func (s *Sim) reconcileProcess(ctx context.Context, gvr schema.GroupVersionResource, obj *unstructured.Unstructured, want desiredFunc) (time.Duration, error) {
	d, err := want(obj)
	if err != nil {
		return 0, err
	}
	if d.invalid != nil {
		log.Printf("vmoperator-sim: %s %s/%s: %v", gvr.Resource, obj.GetNamespace(), obj.GetName(), d.invalid)
		return 15 * time.Second, nil
	}
	procKey := gvr.Resource + "/" + obj.GetNamespace() + "/" + obj.GetName()
	p := s.process(procKey)
	zone := gvr == gvrCluster || gvr == gvrSingle || gvr == gvrVLCluster
	if zone && p != nil && p.running() {
		// A zone process is a container of the operator's vmstorage Pod: it restarts when the
		// operator (or the StatefulSet controller) replaces that Pod, not when the spec changes.
		podUID := s.zonePodUID(ctx, gvr, obj)
		switch {
		case podUID == "" || podUID == p.podUID:
			return 0, nil
		case p.podUID == "":
			p.podUID = podUID // the Pod of the process's first start
			return 0, nil
		}
		d.podUID = podUID
	} else if p != nil && p.running() && p.binary == d.binary && strings.Join(p.args, "\x00") == strings.Join(d.args, "\x00") {
		if d.onRunning != nil {
			return 0, d.onRunning(p)
		}
		return 0, nil
	}
	if zone && d.podUID == "" {
		d.podUID = s.zonePodUID(ctx, gvr, obj)
	}
	if err := s.restart(ctx, gvr, obj, procKey, d); err != nil {
		log.Printf("vmoperator-sim: %s %s/%s: %v", gvr.Resource, obj.GetNamespace(), obj.GetName(), err)
		return 30 * time.Second, nil
	}
	return 0, nil
}

// zonePodUID is the UID of the operator's first vmstorage Pod of a VMCluster, or of the (Recreate-strategy
// Deployment's) Pod of a VMSingle; "" while there is none.
func (s *Sim) zonePodUID(ctx context.Context, gvr schema.GroupVersionResource, obj *unstructured.Unstructured) string {
	if gvr == gvrVLCluster {
		return s.vlstoragePodUID(ctx, obj)
	}
	if gvr == gvrSingle {
		pods, err := s.kube.CoreV1().Pods(obj.GetNamespace()).List(ctx, metav1.ListOptions{
			LabelSelector: "app.kubernetes.io/name=vmsingle,app.kubernetes.io/instance=" + obj.GetName(),
		})
		if err != nil {
			return ""
		}
		for _, pod := range pods.Items {
			if pod.DeletionTimestamp == nil {
				return string(pod.UID)
			}
		}
		return ""
	}
	pod, err := s.kube.CoreV1().Pods(obj.GetNamespace()).Get(ctx, "vmstorage-"+obj.GetName()+"-0", metav1.GetOptions{})
	if err != nil || pod.DeletionTimestamp != nil {
		return ""
	}
	return string(pod.UID)
}

func (s *Sim) restart(ctx context.Context, gvr schema.GroupVersionResource, obj *unstructured.Unstructured, procKey string, d desired) error {
	kind := strings.TrimSuffix(gvr.Resource, "s")
	name := kind + "-" + obj.GetNamespace() + "-" + obj.GetName()
	replacing := false
	if old := s.process(procKey); old != nil && old.running() {
		log.Printf("vmoperator-sim: stopping %s (pid %d)", name, old.pid())
		old.stop(30 * time.Second)
		replacing = true
	}
	if delay := s.cfg.podRestart(); delay > 0 && replacing {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(delay):
		}
	}
	waitCtx, cancel := context.WithTimeout(ctx, s.cfg.readyTimeout())
	defer cancel()
	if d.unavailable != nil {
		<-waitCtx.Done()
		return d.unavailable
	}
	if d.beforeStart != nil {
		if err := d.beforeStart(); err != nil {
			return err
		}
	}
	logPath := filepath.Join(s.cfg.LogDir, name+".log")
	p := &process{name: name, binary: d.binary, args: d.args, logPath: logPath, health: fmt.Sprintf("http://127.0.0.1:%d/health", d.port), podUID: d.podUID}
	if s.podNet != nil {
		if err := s.podNet.forward(d.port); err != nil {
			return err
		}
	}
	s.mu.Lock()
	s.processes[procKey] = p
	s.mu.Unlock()
	if err := p.start(); err != nil {
		return err
	}
	log.Printf("vmoperator-sim: started %s %s (pid %d) on 127.0.0.1:%d", name, d.version, p.pid(), d.port)
	if err := p.waitHealthy(waitCtx); err != nil {
		// A crash-looping pod: keep the object failed until the spec changes.
		return fmt.Errorf("cannot wait for %s to become ready: %w", name, err)
	}
	s.endpoints.set(Endpoint{Kind: obj.GetKind(), Key: obj.GetNamespace() + "/" + obj.GetName(), URL: fmt.Sprintf("http://127.0.0.1:%d", d.port), Version: d.version, PID: p.pid(), LogPath: logPath, Args: d.args})
	return nil
}

func (s *Sim) process(key string) *process {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.processes[key]
}

func (s *Sim) stopProcess(key string) {
	s.mu.Lock()
	p := s.processes[key]
	delete(s.processes, key)
	s.mu.Unlock()
	if p != nil {
		p.stop(30 * time.Second)
	}
}

func (s *Sim) stopAll() {
	s.mu.Lock()
	list := make([]*process, 0, len(s.processes))
	for _, p := range s.processes {
		list = append(list, p)
	}
	s.mu.Unlock()
	var wg sync.WaitGroup
	for _, p := range list {
		wg.Add(1)
		go func() { defer wg.Done(); p.stop(10 * time.Second) }()
	}
	wg.Wait()
}

// setStatus writes status like the operator's UpdateObjectStatus: observedGeneration follows
// metadata.generation on every write, reason is cleared except for "failed".
func (s *Sim) setStatus(ctx context.Context, gvr schema.GroupVersionResource, obj *unstructured.Unstructured, updateStatus, reason string, recordSpec bool) error {
	for attempt := 0; attempt < 5; attempt++ {
		latest, err := s.dyn.Resource(gvr).Namespace(obj.GetNamespace()).Get(ctx, obj.GetName(), metav1.GetOptions{})
		if err != nil {
			return err
		}
		status, _, _ := unstructured.NestedMap(latest.Object, "status")
		if status == nil {
			status = map[string]interface{}{}
		}
		status["updateStatus"] = updateStatus
		// The generation and spec of the object this reconcile worked from, not the latest: a
		// spec written meanwhile must still read as not yet observed.
		status["observedGeneration"] = obj.GetGeneration()
		if updateStatus == statusFailed {
			status["reason"] = reason
		} else if updateStatus != statusPaused {
			delete(status, "reason")
		}
		if recordSpec {
			spec, _, _ := unstructured.NestedMap(obj.Object, "spec")
			status["lastAppliedSpec"] = spec
		}
		latest.Object["status"] = status
		_, err = s.dyn.Resource(gvr).Namespace(obj.GetNamespace()).UpdateStatus(ctx, latest, metav1.UpdateOptions{FieldManager: "vm-operator"})
		if apierrors.IsConflict(err) {
			continue
		}
		return err
	}
	return fmt.Errorf("status update of %s/%s kept conflicting", obj.GetNamespace(), obj.GetName())
}

func dataDir(root, kind, ns, name string) (string, error) {
	dir := filepath.Join(root, kind, ns+"_"+name)
	return dir, os.MkdirAll(dir, 0o755)
}
