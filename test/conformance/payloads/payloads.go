// Package payloads builds the realistic Argo Rollouts objects the conformance tests and the
// benchmark send to the plugins.
package payloads

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/argoproj/argo-rollouts/pkg/apis/rollouts/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Zones used for times: half-hour offsets and a sub-minute (historical Amsterdam) offset, which
// gob sends in the 16-byte version-2 time layout.
var (
	zoneIndia     = time.FixedZone("IST", 5*3600+30*60)
	zoneAmsterdam = time.FixedZone("AMT", 19*60+32)
	zoneNegative  = time.FixedZone("NST", -(3*3600 + 30*60))
	// ZoneNewYorkLMT has a negative sub-minute offset (-4:56:02). Go's own Time.UnmarshalBinary
	// reads the seconds byte as unsigned and decodes -4:51:46 instead (-17506 s, not -17762 s).
	ZoneNewYorkLMT = time.FixedZone("LMT", -(4*3600 + 56*60 + 2))
)

// Time returns a metav1.Time with nanoseconds in the given zone.
func Time(unix int64, nanos int64, zone *time.Location) *metav1.Time {
	t := metav1.NewTime(time.Unix(unix, nanos).In(zone))
	return &t
}

// Unicode strings that a careless UTF-8/UTF-16 conversion would break.
const (
	UnicodeLabel = "zoné-ß-日本語-🚀"
	UnicodeText  = "Ünïcödé ✓ — 中文 — עברית — 👩‍👩‍👧‍👦 — \u2028 line sep — tab\there — \"quotes\" — \\backslash"
)

func ptr[T any](v T) *T { return &v }

func mustJSON(v any) json.RawMessage {
	data, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return data
}

// PodTemplate is a full pod template: resources, probes, env, affinity, tolerations, volumes.
func PodTemplate() corev1.PodTemplateSpec {
	probe := func(path string, port int32) *corev1.Probe {
		return &corev1.Probe{
			ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
				Path: path, Port: intstr.FromInt32(port), Scheme: corev1.URISchemeHTTP,
				HTTPHeaders: []corev1.HTTPHeader{{Name: "X-Probe", Value: "vmzones"}},
			}},
			InitialDelaySeconds: 5, TimeoutSeconds: 2, PeriodSeconds: 10, SuccessThreshold: 1, FailureThreshold: 6,
		}
	}
	container := func(name string) corev1.Container {
		return corev1.Container{
			Name:            name,
			Image:           "registry.example.com/victoriametrics/vmstorage:v1.118.0-cluster",
			ImagePullPolicy: corev1.PullIfNotPresent,
			Command:         []string{"/vmstorage-prod"},
			Args:            []string{"-retentionPeriod=12", "-storageDataPath=/storage", "-dedup.minScrapeInterval=30s"},
			Ports: []corev1.ContainerPort{
				{Name: "http", ContainerPort: 8482, Protocol: corev1.ProtocolTCP},
				{Name: "vminsert", ContainerPort: 8400, Protocol: corev1.ProtocolTCP},
				{Name: "vmselect", ContainerPort: 8401, Protocol: corev1.ProtocolTCP},
			},
			Env: []corev1.EnvVar{
				{Name: "ZONE", Value: "zone-a"},
				{Name: "GREETING", Value: UnicodeText},
				{Name: "EMPTY", Value: ""},
				{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
				{Name: "MEMORY_LIMIT", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{
					Resource: "limits.memory", Divisor: resource.MustParse("1Mi"),
				}}},
				{Name: "PASSWORD", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
					LocalObjectReference: corev1.LocalObjectReference{Name: "vm-credentials"}, Key: "password", Optional: ptr(true),
				}}},
			},
			EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "vm-env"}}}},
			Resources: corev1.ResourceRequirements{
				Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("16Gi")},
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("8Gi")},
			},
			VolumeMounts: []corev1.VolumeMount{
				{Name: "storage", MountPath: "/storage"},
				{Name: "config", MountPath: "/etc/vm", ReadOnly: true, SubPath: "vm.yaml"},
			},
			LivenessProbe:  probe("/health", 8482),
			ReadinessProbe: probe("/ready", 8482),
			StartupProbe:   &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromString("http")}}, FailureThreshold: 30},
			Lifecycle:      &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"sh", "-c", "sleep 5"}}}},
			SecurityContext: &corev1.SecurityContext{
				RunAsNonRoot: ptr(true), RunAsUser: ptr(int64(65534)), ReadOnlyRootFilesystem: ptr(true),
				AllowPrivilegeEscalation: ptr(false),
				Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}, Add: []corev1.Capability{}},
			},
			TerminationMessagePath:   "/dev/termination-log",
			TerminationMessagePolicy: corev1.TerminationMessageReadFile,
		}
	}
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{
			Labels: map[string]string{"app.kubernetes.io/name": "vmstorage", "zone": UnicodeLabel},
			Annotations: map[string]string{
				"vmzones.io/spec":                   "overrideSpec:\n  clusterVersion: v1.118.0-cluster\nzones:\n  zone-a: {vmcluster: vm-zone-a}\n  zone-b: {vmcluster: vm-zone-b}\n",
				"note":                              UnicodeText,
				"empty":                             "",
				"kubectl.kubernetes.io/restartedAt": "2026-03-14T15:09:26+05:30",
			},
		},
		Spec: corev1.PodSpec{
			InitContainers:                []corev1.Container{container("init-storage")},
			Containers:                    []corev1.Container{container("vmstorage"), container("sidecar")},
			RestartPolicy:                 corev1.RestartPolicyAlways,
			TerminationGracePeriodSeconds: ptr(int64(60)),
			DNSPolicy:                     corev1.DNSClusterFirst,
			NodeSelector:                  map[string]string{"topology.kubernetes.io/zone": "eu-west-1a"},
			ServiceAccountName:            "vmstorage",
			SecurityContext:               &corev1.PodSecurityContext{FSGroup: ptr(int64(2000)), RunAsGroup: ptr(int64(3000))},
			ImagePullSecrets:              []corev1.LocalObjectReference{{Name: "registry"}},
			Affinity: &corev1.Affinity{
				NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
					NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
						{Key: "topology.kubernetes.io/zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"eu-west-1a", "eu-west-1b"}},
					}}},
				}},
				PodAntiAffinity: &corev1.PodAntiAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{
					Weight: 100,
					PodAffinityTerm: corev1.PodAffinityTerm{
						LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app.kubernetes.io/name": "vmstorage"}},
						TopologyKey:   "kubernetes.io/hostname",
					},
				}}},
			},
			Tolerations: []corev1.Toleration{
				{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "vm", Effect: corev1.TaintEffectNoSchedule},
				{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr(int64(300))},
			},
			Volumes: []corev1.Volume{
				{Name: "storage", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: ptr(resource.MustParse("100Gi"))}}},
				{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
					LocalObjectReference: corev1.LocalObjectReference{Name: "vm-config"}, DefaultMode: ptr(int32(0o444)),
				}}},
			},
			TopologySpreadConstraints: []corev1.TopologySpreadConstraint{{
				MaxSkew: 1, TopologyKey: "topology.kubernetes.io/zone", WhenUnsatisfiable: corev1.DoNotSchedule,
				LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app.kubernetes.io/name": "vmstorage"}},
			}},
		},
	}
}

// Steps returns n canary steps cycling through plugin, setWeight, pause (int, string, nil
// duration), analysis and setCanaryScale steps.
func Steps(n int, pluginName string) []v1alpha1.CanaryStep {
	steps := make([]v1alpha1.CanaryStep, n)
	for i := range steps {
		switch i % 6 {
		case 0:
			steps[i] = v1alpha1.CanaryStep{Plugin: &v1alpha1.PluginStep{Name: pluginName, Config: mustJSON(map[string]any{
				"zone": fmt.Sprintf("zone-%c", 'a'+i%3), "action": "drainReads", "note": UnicodeText, "index": i,
			})}}
		case 1:
			steps[i] = v1alpha1.CanaryStep{SetWeight: ptr(int32(i * 5))}
		case 2:
			steps[i] = v1alpha1.CanaryStep{Pause: &v1alpha1.RolloutPause{Duration: ptr(intstr.FromInt32(30))}}
		case 3:
			steps[i] = v1alpha1.CanaryStep{Pause: &v1alpha1.RolloutPause{Duration: ptr(intstr.FromString("1m30s"))}}
		case 4:
			steps[i] = v1alpha1.CanaryStep{Analysis: &v1alpha1.RolloutAnalysis{
				Templates: []v1alpha1.AnalysisTemplateRef{{TemplateName: "vmzones-zone-healthy", ClusterScope: ptr(true)}},
				Args:      []v1alpha1.AnalysisRunArgument{{Name: "zone", Value: "zone-a"}},
			}}
		case 5:
			if i%12 == 5 {
				steps[i] = v1alpha1.CanaryStep{Pause: &v1alpha1.RolloutPause{}} // manual approval: nil duration
			} else {
				steps[i] = v1alpha1.CanaryStep{Plugin: &v1alpha1.PluginStep{Name: pluginName, Config: json.RawMessage(`{}`)}}
			}
		}
	}
	return steps
}

// Rollout is a realistic Rollout: 20 steps, a full pod template, step plugin statuses, times with
// nanoseconds in non-UTC zones, unicode, and empty as well as nil collections.
func Rollout(pluginName string) *v1alpha1.Rollout {
	return &v1alpha1.Rollout{
		TypeMeta: metav1.TypeMeta{Kind: "Rollout", APIVersion: "argoproj.io/v1alpha1"},
		ObjectMeta: metav1.ObjectMeta{
			Name: "vm-zones", Namespace: "monitoring", UID: "8d1c7a52-3f0e-4a4b-9d6e-2b1f0c9e7a11",
			ResourceVersion: "123456789", Generation: 42,
			CreationTimestamp: *Time(1760000000, 123456789, zoneIndia),
			Labels:            map[string]string{"app": "vm", "team": UnicodeLabel},
			Annotations:       map[string]string{"rollout.argoproj.io/revision": "7", "description": UnicodeText},
			Finalizers:        []string{}, // empty, not nil
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "argoproj.io/v1alpha1", Kind: "Application", Name: "vm", UID: "0b6d6f1e-0000-4000-8000-000000000001",
				Controller: ptr(true), BlockOwnerDeletion: ptr(false),
			}},
			ManagedFields: []metav1.ManagedFieldsEntry{{
				Manager: "argocd-controller", Operation: metav1.ManagedFieldsOperationApply, APIVersion: "argoproj.io/v1alpha1",
				Time: Time(1760000100, 0, time.UTC), FieldsType: "FieldsV1",
				FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:spec":{"f:replicas":{}}}`)},
			}},
		},
		Spec: v1alpha1.RolloutSpec{
			Replicas:                ptr(int32(1)),
			Selector:                &metav1.LabelSelector{MatchLabels: map[string]string{"app": "vm"}, MatchExpressions: []metav1.LabelSelectorRequirement{}},
			Template:                PodTemplate(),
			MinReadySeconds:         10,
			RevisionHistoryLimit:    ptr(int32(3)),
			ProgressDeadlineSeconds: ptr(int32(600)),
			Strategy: v1alpha1.RolloutStrategy{Canary: &v1alpha1.CanaryStrategy{
				CanaryService: "vm-canary", StableService: "vm-stable",
				MaxSurge:       ptr(intstr.FromString("25%")),
				MaxUnavailable: ptr(intstr.FromInt32(0)),
				Steps:          Steps(20, pluginName),
			}},
		},
		Status: v1alpha1.RolloutStatus{
			AbortedAt:       Time(1760000500, 999999999, zoneAmsterdam),
			CurrentPodHash:  "6b8f9c7d5",
			CurrentStepHash: "5d4c3b2a1",
			Replicas:        1, UpdatedReplicas: 1, ReadyReplicas: 1, AvailableReplicas: 1,
			CurrentStepIndex:   ptr(int32(6)),
			ObservedGeneration: "42",
			StableRS:           "7c6d5e4f3",
			Phase:              v1alpha1.RolloutPhaseProgressing,
			Message:            "waiting for " + UnicodeLabel,
			PauseConditions:    []v1alpha1.PauseCondition{},
			Conditions: []v1alpha1.RolloutCondition{{
				Type: v1alpha1.RolloutProgressing, Status: corev1.ConditionTrue, Reason: "ReplicaSetUpdated",
				Message:            "ReplicaSet \"vm-zones-6b8f9c7d5\" is progressing.",
				LastUpdateTime:     *Time(1760000200, 1, time.UTC),
				LastTransitionTime: *Time(1760000200, 500, zoneNegative),
			}},
			Canary: v1alpha1.CanaryStatus{StepPluginStatuses: []v1alpha1.StepPluginStatus{
				{
					Index: 0, Name: pluginName, Operation: v1alpha1.StepPluginOperationRun, Phase: v1alpha1.StepPluginPhaseSuccessful,
					Message: "zone-a drained ✓", StartedAt: Time(1760000300, 123, zoneIndia), UpdatedAt: Time(1760000310, 0, time.UTC),
					FinishedAt: Time(1760000320, 999, time.Local), Executions: 3,
					Status: mustJSON(map[string]any{"zone": "zone-a", "before": map[string]any{"replicas": 3}, "note": UnicodeText}),
				},
				{
					Index: 5, Name: pluginName, Operation: v1alpha1.StepPluginOperationRun, Phase: v1alpha1.StepPluginPhaseRunning,
					StartedAt: Time(1760000400, 0, zoneAmsterdam), UpdatedAt: Time(1760000401, 1000, zoneAmsterdam),
					Backoff: "30s", Executions: 1,
				},
				{
					Index: 5, Name: pluginName, Operation: v1alpha1.StepPluginOperationAbort, Phase: v1alpha1.StepPluginPhaseError,
					Message: "boom", Disabled: true, Status: json.RawMessage(`{}`),
				},
			}},
		},
	}
}

// LargeRollout is Rollout plus an annotation of at least size bytes of mixed unicode, so the
// request (and the echo reply) cross yamux flow-control windows several times.
func LargeRollout(pluginName string, size int) *v1alpha1.Rollout {
	r := Rollout(pluginName)
	chunk := "vmzones-" + UnicodeText + "-"
	var b strings.Builder
	for b.Len() < size {
		b.WriteString(chunk)
	}
	r.Annotations["vmzones.io/large"] = b.String()
	return r
}

// AnalysisRun is a realistic AnalysisRun with metric results and measurements.
func AnalysisRun(pluginName string) *v1alpha1.AnalysisRun {
	return &v1alpha1.AnalysisRun{
		TypeMeta: metav1.TypeMeta{Kind: "AnalysisRun", APIVersion: "argoproj.io/v1alpha1"},
		ObjectMeta: metav1.ObjectMeta{
			Name: "vm-zones-6b8f9c7d5-7-2", Namespace: "monitoring", UID: "1f2e3d4c-5b6a-4978-8695-a4b3c2d1e0f9",
			ResourceVersion: "987654", Generation: 3, CreationTimestamp: *Time(1760001000, 42, zoneIndia),
			Labels:      map[string]string{"rollouts-pod-template-hash": "6b8f9c7d5", "zone": UnicodeLabel},
			Annotations: map[string]string{"rollout.argoproj.io/revision": "7", "empty": ""},
		},
		Spec: v1alpha1.AnalysisRunSpec{
			Metrics: []v1alpha1.Metric{Metric(pluginName, map[string]any{"gate": "vmcluster-operational"}), {Name: "second", Provider: v1alpha1.MetricProvider{Plugin: map[string]json.RawMessage{pluginName: json.RawMessage(`{}`)}}}},
			Args: []v1alpha1.Argument{
				{Name: "zone", Value: ptr("zone-a")},
				{Name: "unset"},
				{Name: "fromSecret", ValueFrom: &v1alpha1.ValueFrom{SecretKeyRef: &v1alpha1.SecretKeyRef{Name: "s", Key: "k"}}},
				{Name: "unicode", Value: ptr(UnicodeText)},
			},
			DryRun:               []v1alpha1.DryRun{{MetricName: "second"}},
			MeasurementRetention: []v1alpha1.MeasurementRetention{{MetricName: "*", Limit: 5}},
		},
		Status: v1alpha1.AnalysisRunStatus{
			Phase: v1alpha1.AnalysisPhaseRunning, Message: "in progress " + UnicodeLabel,
			StartedAt: Time(1760001001, 5, zoneNegative),
			MetricResults: []v1alpha1.MetricResult{{
				Name: "vmcluster-operational", Phase: v1alpha1.AnalysisPhaseRunning, Count: 2, Successful: 1, Failed: 0,
				Inconclusive: 0, Error: 1, ConsecutiveError: 1, ConsecutiveSuccess: 0,
				Metadata:     map[string]string{"query": "up{zone=\"zone-a\"}"},
				Measurements: []v1alpha1.Measurement{Measurement(), {Phase: v1alpha1.AnalysisPhaseError, Message: "scrape failed"}},
			}},
			RunSummary: v1alpha1.RunSummary{Count: 1, Successful: 0, Error: 1},
		},
	}
}

// Metric is a plugin metric whose provider config is config (JSON-encoded under pluginName).
func Metric(pluginName string, config map[string]any) v1alpha1.Metric {
	return v1alpha1.Metric{
		Name:                    "vmcluster-operational",
		Interval:                "30s",
		InitialDelay:            "10s",
		Count:                   ptr(intstr.FromInt32(5)),
		SuccessCondition:        "result == true",
		FailureCondition:        "result == false && " + "\"" + UnicodeLabel + "\" != \"\"",
		FailureLimit:            ptr(intstr.FromString("2")),
		InconclusiveLimit:       ptr(intstr.FromInt32(1)),
		ConsecutiveErrorLimit:   ptr(intstr.FromInt32(4)),
		ConsecutiveSuccessLimit: ptr(intstr.FromInt32(3)),
		Provider:                v1alpha1.MetricProvider{Plugin: map[string]json.RawMessage{pluginName: mustJSON(config)}},
	}
}

// Measurement is an in-progress measurement with metadata and times in odd zones.
func Measurement() v1alpha1.Measurement {
	return v1alpha1.Measurement{
		Phase: v1alpha1.AnalysisPhaseRunning, Message: "waiting " + UnicodeLabel,
		StartedAt: Time(1760001002, 123456789, zoneAmsterdam),
		ResumeAt:  Time(1760001032, 1, zoneIndia),
		Value:     "",
		Metadata:  map[string]string{"zone": "zone-a", "empty": "", "unicode": UnicodeText},
	}
}
