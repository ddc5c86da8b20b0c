package vmsim

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"net/url"
	"regexp"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// operatorAuthConfig takes the vmauth config the real operator rendered into Secret
// vmauth-config-<name> (config.yaml.gz) — what its config-reloader sidecar would hand to vmauth —
// and points its in-cluster URLs at the sandbox's loopback processes.
func (s *Sim) operatorAuthConfig(ctx context.Context, auth *unstructured.Unstructured) (string, error) {
	name := "vmauth-config-" + auth.GetName()
	secret, err := s.kube.CoreV1().Secrets(auth.GetNamespace()).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("operator config %s/%s: %w", auth.GetNamespace(), name, err)
	}
	packed, ok := secret.Data["config.yaml.gz"]
	if !ok {
		return "", fmt.Errorf("operator config %s/%s has no config.yaml.gz", auth.GetNamespace(), name)
	}
	reader, err := gzip.NewReader(bytes.NewReader(packed))
	if err != nil {
		return "", err
	}
	raw, err := io.ReadAll(reader)
	if err != nil {
		return "", err
	}
	var config interface{}
	if err := yaml.Unmarshal(raw, &config); err != nil {
		return "", fmt.Errorf("operator config: %w", err)
	}
	if err := s.localizeURLs(config); err != nil {
		return "", err
	}
	out, err := yaml.Marshal(config)
	return string(out), err
}

var anyServiceHost = regexp.MustCompile(`\.svc(\.cluster\.local)?$`)

// localizeURLs rewrites every url_prefix / default_url in the config tree: a VMCluster
// component's service goes to that zone's process (and /select/<tenant>/ is dropped, since the zone
// is a single-node process), a VMSingle's or VLCluster's service to its process, any other in-cluster service host to 127.0.0.1 with its port.
func (s *Sim) localizeURLs(node interface{}) error {
	switch v := node.(type) {
	case map[string]interface{}:
		zoneTarget := false
		for _, key := range []string{"url_prefix", "default_url"} {
			value, ok := v[key]
			if !ok {
				continue
			}
			rewritten, zone, err := s.localizeValue(value)
			if err != nil {
				return err
			}
			v[key] = rewritten
			zoneTarget = zoneTarget || zone
		}
		if _, set := v["drop_src_path_prefix_parts"]; zoneTarget && !set {
			v["drop_src_path_prefix_parts"] = 2
		}
		for key, child := range v {
			if key != "url_prefix" && key != "default_url" {
				if err := s.localizeURLs(child); err != nil {
					return err
				}
			}
		}
	case []interface{}:
		for _, child := range v {
			if err := s.localizeURLs(child); err != nil {
				return err
			}
		}
	}
	return nil
}

func (s *Sim) localizeValue(value interface{}) (interface{}, bool, error) {
	switch v := value.(type) {
	case string:
		return s.localizeURL(v)
	case []interface{}:
		out := make([]interface{}, len(v))
		zone := false
		for i, item := range v {
			str, _ := item.(string)
			rewritten, z, err := s.localizeURL(str)
			if err != nil {
				return nil, false, err
			}
			out[i], zone = rewritten, zone || z
		}
		return out, zone, nil
	}
	return value, false, nil
}

func (s *Sim) localizeURL(raw string) (string, bool, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", false, err
	}
	if gvr, ns, name, ok := serviceZone(u.Hostname()); ok {
		port, err := s.portFor(gvr, ns, name)
		if err != nil {
			return "", false, err
		}
		u.Host = fmt.Sprintf("127.0.0.1:%d", port)
		if gvr != gvrCluster {
			// A VMSingle or a VLCluster's victoria-logs serves the paths it is asked for: nothing to drop.
			return strings.TrimSuffix(u.String(), "/"), false, nil
		}
		u.Path = strings.TrimSuffix(tenantPath.ReplaceAllString(u.Path, ""), "/")
		return u.String(), true, nil
	}
	if anyServiceHost.MatchString(u.Hostname()) {
		u.Host = "127.0.0.1:" + u.Port()
	}
	return u.String(), false, nil
}
