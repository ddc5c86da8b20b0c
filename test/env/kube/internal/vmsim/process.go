package vmsim

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// process is one real VictoriaMetrics process (a zone, vmagent or vmauth). It lives in the
// simulator's process group and dies with it (Pdeathsig), so tearing the sandbox down never
// leaves it behind.
type process struct {
	name    string
	binary  string
	args    []string
	logPath string
	health  string
	// podUID is the operator-managed vmstorage Pod this zone process plays (data-plane mode).
	podUID string

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
}

func (p *process) start() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd != nil {
		return fmt.Errorf("%s already running", p.name)
	}
	if _, err := os.Stat(p.binary); err != nil {
		return fmt.Errorf("binary for %s: %w", p.name, err)
	}
	logFile, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	fmt.Fprintf(logFile, "\n=== %s start: %s %v\n", time.Now().Format(time.RFC3339), p.binary, p.args)
	cmd := exec.Command(p.binary, p.args...)
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		_ = logFile.Close()
		return err
	}
	done := make(chan struct{})
	p.cmd, p.done = cmd, done
	go func() {
		err := cmd.Wait()
		fmt.Fprintf(logFile, "=== %s exit: %v\n", time.Now().Format(time.RFC3339), err)
		_ = logFile.Close()
		p.mu.Lock()
		if p.cmd == cmd {
			p.cmd = nil
		}
		p.mu.Unlock()
		close(done)
	}()
	return nil
}

// stop sends SIGTERM (VictoriaMetrics flushes and closes its storage / queues) and waits, then
// SIGKILLs after the grace period, like a pod's termination.
func (p *process) stop(grace time.Duration) {
	p.mu.Lock()
	cmd, done := p.cmd, p.done
	p.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-done:
	case <-time.After(grace):
		_ = cmd.Process.Kill()
		<-done
	}
}

func (p *process) running() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cmd != nil
}

func (p *process) pid() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return 0
	}
	return p.cmd.Process.Pid
}

func (p *process) signal(sig syscall.Signal) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return fmt.Errorf("%s is not running", p.name)
	}
	return p.cmd.Process.Signal(sig)
}

// waitHealthy polls the process's /health until it answers 200, the process exits, or ctx ends.
func (p *process) waitHealthy(ctx context.Context) error {
	client := &http.Client{Timeout: time.Second}
	for {
		if !p.running() {
			return fmt.Errorf("%s exited during start-up (see %s)", p.name, p.logPath)
		}
		if resp, err := client.Get(p.health); err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s not healthy at %s: %w", p.name, p.health, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}
