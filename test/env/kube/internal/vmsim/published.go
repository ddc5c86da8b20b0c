package vmsim

import (
	"fmt"
	"log"
	"net"
	"net/http"
	"net/url"
	"time"
)

// startPublished listens on every Config.Publish address and forwards each request to its Service, through the
// same translation as the service proxy (a VMCluster's vminsert/vmselect Service goes to the zone's single-node
// process, without the /insert|select/<tenant> prefix). A zone that is down drops the connection, as a load
// balancer without ready endpoints does. Called once, before the workers start.
func (s *Sim) startPublished() error {
	client := &http.Client{
		Transport: &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 16, IdleConnTimeout: 30 * time.Second},
		Timeout:   60 * time.Second,
	}
	for _, p := range s.cfg.Publish {
		l, err := net.Listen("tcp", p.Address)
		if err != nil {
			return fmt.Errorf("publish %s on %s: %w", p.Service, p.Address, err)
		}
		service := p.Service
		handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			target, err := s.translateURL("http://" + service + r.URL.RequestURI())
			if err != nil {
				dropConnection(w)
				return
			}
			u, err := url.Parse(target)
			if err != nil || u.Hostname() != "127.0.0.1" {
				http.Error(w, "sandbox published service: no zone behind "+service, http.StatusBadGateway)
				return
			}
			forward(w, r, u, client)
		})
		go func() {
			if err := http.Serve(l, handler); err != nil {
				log.Printf("vmoperator-sim: published %s stopped: %v", service, err)
			}
		}()
		s.endpoints.set(Endpoint{Kind: "Published", Key: service, URL: "http://" + p.Address})
		log.Printf("vmoperator-sim: published %s on %s", service, p.Address)
	}
	return nil
}
