package vmsim

import (
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/url"
	"time"
)

// serviceProxy is the sandbox's stand-in for cluster DNS + Services on vmagent's write path:
// vmagent keeps the production URLs of the VMAgent spec (so its queue folders, hashed from those
// URLs, match what the operator's Pod args say) and sends them through this HTTP proxy
// (-remoteWrite.proxyURL), which forwards vminsert-<cluster>.<ns>.svc to that zone's process. A
// zone that is down drops the connection, as a Service without ready endpoints does. A loopback address
// (127.0.0.0/8) is sent on as it is: it stands for an address outside the cluster, such as another
// cluster's published vminsert (published.go), which the network, not cluster DNS, routes.
type serviceProxy struct {
	sim      *Sim
	listener net.Listener
	client   *http.Client
}

func (s *Sim) startProxy() (*serviceProxy, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("service proxy: %w", err)
	}
	p := &serviceProxy{sim: s, listener: l, client: &http.Client{
		Transport: &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 16, IdleConnTimeout: 30 * time.Second},
		Timeout:   60 * time.Second,
	}}
	go func() {
		if err := http.Serve(l, p); err != nil {
			log.Printf("vmoperator-sim: service proxy stopped: %v", err)
		}
	}()
	return p, nil
}

func (p *serviceProxy) url() string { return "http://" + p.listener.Addr().String() }

func (p *serviceProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Host == "" && r.URL.Path == "/health" {
		_, _ = io.WriteString(w, "OK")
		return
	}
	if r.URL.Host == "" {
		http.Error(w, "sandbox service proxy: absolute URL expected", http.StatusBadRequest)
		return
	}
	if ip := net.ParseIP(r.URL.Hostname()); ip != nil && ip.IsLoopback() {
		forward(w, r, r.URL, p.client)
		return
	}
	target, err := p.sim.translateURL(r.URL.String())
	if err != nil || target == r.URL.String() {
		http.Error(w, "sandbox service proxy: no sandbox zone behind "+r.URL.Host, http.StatusBadGateway)
		return
	}
	u, err := url.Parse(target)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	forward(w, r, u, p.client)
}

// forward sends r to u and copies the answer back; a target that does not answer drops the connection.
func forward(w http.ResponseWriter, r *http.Request, u *url.URL, client *http.Client) {
	out := r.Clone(r.Context())
	out.URL, out.Host, out.RequestURI = u, u.Host, ""
	resp, err := client.Do(out)
	if err != nil {
		dropConnection(w)
		return
	}
	defer resp.Body.Close()
	for k, values := range resp.Header {
		for _, v := range values {
			w.Header().Add(k, v)
		}
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = io.Copy(w, resp.Body)
}

// dropConnection closes the client's connection without an answer: the client sees a connection
// error, not an HTTP status, as with a Service whose endpoints are all down.
func dropConnection(w http.ResponseWriter) {
	if hijacker, ok := w.(http.Hijacker); ok {
		if conn, _, err := hijacker.Hijack(); err == nil {
			_ = conn.Close()
			return
		}
	}
	http.Error(w, "zone unavailable", http.StatusBadGateway)
}
