// Package kubelet is the sandbox's simulated kubelet: it registers one Node, keeps its heartbeat
// (Lease + Ready condition) fresh, and plays the kubelet's part for every Pod the real
// kube-scheduler binds to that Node: it reports the Pod Running with all containers started, runs
// httpGet readiness probes (so Ready follows a real process when a probe is declared) and finishes
// graceful deletion. No container is run: a Pod without a probe is Ready as soon as it is bound.
package kubelet

import (
	"context"
	"fmt"
	"log"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
)

// DefaultPodIP is the address every simulated Pod reports unless Kubelet.PodIP says otherwise: the
// sandbox runs everything on loopback, so a process standing behind a Pod (vmagent, for example) is
// reached at 127.0.0.1 and the port declared in the Pod's container spec.
const DefaultPodIP = "127.0.0.1"

const probeInterval = 2 * time.Second

type Kubelet struct {
	// PlayedImages are image prefixes of sidecars the sandbox plays itself (the VictoriaMetrics
	// operator's config-reloader: the sandbox's data plane reloads vmauth/vmagent); their
	// readiness probes are not run.
	PlayedImages []string
	// PodIP, when set, is the address every Pod (and the Node) reports instead of DefaultPodIP: the
	// address inside the sandbox's pod network namespace (test/sandbox/pod-network.ts), where the data
	// plane forwards its ports, so that kube-apiserver (which refuses to proxy to loopback) can reach
	// the Pods through the pod proxy subresource.
	PodIP        string
	client       kubernetes.Interface
	nodeName     string
	mu           sync.Mutex
	probing      map[string]context.CancelFunc // pod UID -> stop its readiness prober
}

func New(client kubernetes.Interface, nodeName string) *Kubelet {
	return &Kubelet{client: client, nodeName: nodeName, probing: map[string]context.CancelFunc{}}
}

func (k *Kubelet) podIP() string {
	if k.PodIP != "" {
		return k.PodIP
	}
	return DefaultPodIP
}

func (k *Kubelet) Run(ctx context.Context) error {
	if err := k.registerNode(ctx); err != nil {
		return fmt.Errorf("register node: %w", err)
	}
	go k.heartbeat(ctx)
	factory := informers.NewSharedInformerFactoryWithOptions(k.client, 0,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("spec.nodeName", k.nodeName).String()
		}))
	podInformer := factory.Core().V1().Pods().Informer()
	handle := func(obj interface{}) {
		if pod, ok := obj.(*corev1.Pod); ok {
			k.syncPod(ctx, pod)
		}
	}
	_, err := podInformer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    handle,
		UpdateFunc: func(_, obj interface{}) { handle(obj) },
		DeleteFunc: func(obj interface{}) {
			if pod, ok := obj.(*corev1.Pod); ok {
				k.stopProbe(string(pod.UID))
			}
		},
	})
	if err != nil {
		return err
	}
	factory.Start(ctx.Done())
	log.Printf("kubelet: node %s registered, watching pods", k.nodeName)
	<-ctx.Done()
	return nil
}

func (k *Kubelet) registerNode(ctx context.Context) error {
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name: k.nodeName,
			Labels: map[string]string{
				"kubernetes.io/hostname": k.nodeName,
				"kubernetes.io/os":       "linux",
				"kubernetes.io/arch":     "amd64",
				"type":                   "vmzones-sandbox-simulated",
			},
		},
	}
	if _, err := k.client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	return k.updateNodeStatus(ctx)
}

func (k *Kubelet) updateNodeStatus(ctx context.Context) error {
	node, err := k.client.CoreV1().Nodes().Get(ctx, k.nodeName, metav1.GetOptions{})
	if err != nil {
		return err
	}
	now := metav1.Now()
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:              resource.MustParse("64"),
		corev1.ResourceMemory:           resource.MustParse("256Gi"),
		corev1.ResourcePods:             resource.MustParse("500"),
		corev1.ResourceEphemeralStorage: resource.MustParse("500Gi"),
	}
	node.Status.Capacity = capacity
	node.Status.Allocatable = capacity
	node.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: k.podIP()}, {Type: corev1.NodeHostName, Address: k.nodeName}}
	node.Status.NodeInfo = corev1.NodeSystemInfo{KubeletVersion: "v1.34.5-vmzones-sandbox", OperatingSystem: "linux", Architecture: "amd64", ContainerRuntimeVersion: "none://simulated"}
	conditions := []corev1.NodeCondition{
		{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", Message: "simulated kubelet is posting ready status"},
		{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasSufficientMemory"},
		{Type: corev1.NodeDiskPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasNoDiskPressure"},
		{Type: corev1.NodePIDPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasSufficientPID"},
	}
	for i := range conditions {
		conditions[i].LastHeartbeatTime = now
		conditions[i].LastTransitionTime = now
		for _, old := range node.Status.Conditions {
			if old.Type == conditions[i].Type && old.Status == conditions[i].Status {
				conditions[i].LastTransitionTime = old.LastTransitionTime
			}
		}
	}
	node.Status.Conditions = conditions
	_, err = k.client.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{})
	return err
}

// heartbeat renews the node Lease every 10 s and the Ready condition every 40 s, as a kubelet does,
// so the node lifecycle controller never marks the node unreachable.
func (k *Kubelet) heartbeat(ctx context.Context) {
	leaseTicker := time.NewTicker(10 * time.Second)
	defer leaseTicker.Stop()
	statusEvery := 4
	for tick := 0; ; tick++ {
		if err := k.renewLease(ctx); err != nil && ctx.Err() == nil {
			log.Printf("kubelet: renew lease: %v", err)
		}
		if tick%statusEvery == statusEvery-1 {
			if err := k.updateNodeStatus(ctx); err != nil && ctx.Err() == nil {
				log.Printf("kubelet: update node status: %v", err)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-leaseTicker.C:
		}
	}
}

func (k *Kubelet) renewLease(ctx context.Context) error {
	leases := k.client.CoordinationV1().Leases(corev1.NamespaceNodeLease)
	now := metav1.NewMicroTime(time.Now())
	lease, err := leases.Get(ctx, k.nodeName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		_, err = leases.Create(ctx, &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: k.nodeName, Namespace: corev1.NamespaceNodeLease},
			Spec: coordinationv1.LeaseSpec{
				HolderIdentity:       ptr.To(k.nodeName),
				LeaseDurationSeconds: ptr.To[int32](40),
				RenewTime:            &now,
			},
		}, metav1.CreateOptions{})
		return err
	}
	if err != nil {
		return err
	}
	lease.Spec.RenewTime = &now
	_, err = leases.Update(ctx, lease, metav1.UpdateOptions{})
	return err
}

func (k *Kubelet) syncPod(ctx context.Context, pod *corev1.Pod) {
	if pod.DeletionTimestamp != nil {
		k.stopProbe(string(pod.UID))
		// The containers "stopped" at once: finish the graceful deletion as the kubelet does.
		err := k.client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{
			GracePeriodSeconds: ptr.To[int64](0),
			Preconditions:      &metav1.Preconditions{UID: &pod.UID},
		})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			log.Printf("kubelet: delete %s/%s: %v", pod.Namespace, pod.Name, err)
		}
		return
	}
	if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return
	}
	probes := k.readinessURLs(pod)
	if pod.Status.Phase != corev1.PodRunning {
		ready := len(probes) == 0
		if err := k.setStatus(ctx, pod, ready); err != nil {
			log.Printf("kubelet: start %s/%s: %v", pod.Namespace, pod.Name, err)
		}
	}
	if len(probes) > 0 {
		k.startProbe(ctx, pod, probes)
	}
}

// readinessURLs lists the httpGet readiness probes of the pod's containers, except those of
// sidecars whose work the sandbox does itself (their image starts with a PlayedImages prefix).
func (k *Kubelet) readinessURLs(pod *corev1.Pod) []string {
	var urls []string
	for _, c := range pod.Spec.Containers {
		if c.ReadinessProbe == nil || c.ReadinessProbe.HTTPGet == nil || k.played(c.Image) {
			continue
		}
		urls = append(urls, probeURL(pod, c.ReadinessProbe.HTTPGet, k.podIP()))
	}
	return urls
}

func (k *Kubelet) played(image string) bool {
	for _, prefix := range k.PlayedImages {
		if strings.HasPrefix(image, prefix) {
			return true
		}
	}
	return false
}

func (k *Kubelet) setStatus(ctx context.Context, pod *corev1.Pod, ready bool) error {
	latest, err := k.client.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	now := metav1.Now()
	readyStatus := corev1.ConditionFalse
	if ready {
		readyStatus = corev1.ConditionTrue
	}
	status := latest.Status.DeepCopy()
	if status.StartTime == nil {
		status.StartTime = &now
	}
	status.Phase = corev1.PodRunning
	status.HostIP = k.podIP()
	status.HostIPs = []corev1.HostIP{{IP: k.podIP()}}
	status.PodIP = k.podIP()
	status.PodIPs = []corev1.PodIP{{IP: k.podIP()}}
	setCondition(status, corev1.PodReadyToStartContainers, corev1.ConditionTrue, now)
	setCondition(status, corev1.PodInitialized, corev1.ConditionTrue, now)
	setCondition(status, corev1.ContainersReady, readyStatus, now)
	setCondition(status, corev1.PodReady, readyStatus, now)
	setCondition(status, corev1.PodScheduled, corev1.ConditionTrue, now)
	started := status.StartTime
	status.ContainerStatuses = nil
	for _, c := range latest.Spec.Containers {
		status.ContainerStatuses = append(status.ContainerStatuses, corev1.ContainerStatus{
			Name:        c.Name,
			Image:       c.Image,
			ImageID:     "sandbox://" + c.Image,
			ContainerID: "sandbox://" + string(latest.UID) + "/" + c.Name,
			Ready:       ready,
			Started:     ptr.To(true),
			State:       corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: *started}},
		})
	}
	status.InitContainerStatuses = nil
	for _, c := range latest.Spec.InitContainers {
		status.InitContainerStatuses = append(status.InitContainerStatuses, corev1.ContainerStatus{
			Name: c.Name, Image: c.Image, ImageID: "sandbox://" + c.Image, Ready: true,
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "Completed", StartedAt: *started, FinishedAt: *started}},
		})
	}
	latest.Status = *status
	_, err = k.client.CoreV1().Pods(pod.Namespace).UpdateStatus(ctx, latest, metav1.UpdateOptions{})
	return err
}

func setCondition(status *corev1.PodStatus, t corev1.PodConditionType, s corev1.ConditionStatus, now metav1.Time) {
	for i := range status.Conditions {
		if status.Conditions[i].Type == t {
			if status.Conditions[i].Status != s {
				status.Conditions[i].Status = s
				status.Conditions[i].LastTransitionTime = now
			}
			return
		}
	}
	status.Conditions = append(status.Conditions, corev1.PodCondition{Type: t, Status: s, LastTransitionTime: now})
}

func (k *Kubelet) startProbe(ctx context.Context, pod *corev1.Pod, urls []string) {
	uid := string(pod.UID)
	k.mu.Lock()
	defer k.mu.Unlock()
	if _, running := k.probing[uid]; running {
		return
	}
	probeCtx, cancel := context.WithCancel(ctx)
	k.probing[uid] = cancel
	go func() {
		client := &http.Client{Timeout: time.Second}
		last := podReady(pod)
		ticker := time.NewTicker(probeInterval)
		defer ticker.Stop()
		for {
			ready := true
			for _, url := range urls {
				ready = ready && probeOnce(probeCtx, client, url)
			}
			if ready != last {
				if err := k.setStatus(probeCtx, pod, ready); err != nil {
					if probeCtx.Err() == nil {
						log.Printf("kubelet: probe status %s/%s: %v", pod.Namespace, pod.Name, err)
					}
				} else {
					log.Printf("kubelet: %s/%s ready=%v (%s)", pod.Namespace, pod.Name, ready, strings.Join(urls, " "))
					last = ready
				}
			}
			select {
			case <-probeCtx.Done():
				return
			case <-ticker.C:
			}
		}
	}()
}

func probeURL(pod *corev1.Pod, probe *corev1.HTTPGetAction, podIP string) string {
	host := probe.Host
	if host == "" {
		host = podIP
	}
	port := probe.Port.String()
	if probe.Port.IntValue() == 0 {
		for _, c := range pod.Spec.Containers {
			for _, p := range c.Ports {
				if p.Name == probe.Port.String() {
					port = strconv.Itoa(int(p.ContainerPort))
				}
			}
		}
	}
	scheme := "http"
	if probe.Scheme == corev1.URISchemeHTTPS {
		scheme = "https"
	}
	return fmt.Sprintf("%s://%s%s", scheme, net.JoinHostPort(host, port), probe.Path)
}

func probeOnce(ctx context.Context, client *http.Client, url string) bool {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return false
	}
	resp, err := client.Do(req)
	if err != nil {
		return false
	}
	_ = resp.Body.Close()
	return resp.StatusCode >= 200 && resp.StatusCode < 400
}

func podReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func (k *Kubelet) stopProbe(uid string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if cancel, ok := k.probing[uid]; ok {
		cancel()
		delete(k.probing, uid)
	}
}
