package agent

import (
	"context"
	"fmt"
	"net"
	"os"
	"sync"

	"github.com/schedhq/sched/agent/runexec"
	"github.com/schedhq/sched/state"
)

// runExecService is the leader duty that executes the management API's
// Terraform runs as jobs (package agent/runexec). It builds its executor
// on first start, once the HTTP listener (whose address the workers call
// back) is bound.
type runExecService struct {
	a *Agent

	mu sync.Mutex
	ex *runexec.Executor
}

var _ leaderService = (*runExecService)(nil)

// runServices are the run executor's leader duties.
func (a *Agent) runServices() []leaderService { return []leaderService{&runExecService{a: a}} }

func (s *runExecService) Name() string { return "run-executor" }

func (s *runExecService) Start(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ex == nil {
		cfg, err := s.a.runExecConfig()
		if err != nil {
			return err
		}
		if s.ex, err = runexec.New(cfg); err != nil {
			return err
		}
	}
	return s.ex.Start(ctx)
}

func (s *runExecService) Stop() {
	s.mu.Lock()
	ex := s.ex
	s.mu.Unlock()
	if ex != nil {
		ex.Stop()
	}
}

// runExecConfig is the executor's configuration: the command is this
// sched binary (clients must have it at the same path), the API address
// is the advertised HTTP address (the listener's, with an unspecified host
// replaced by loopback), and workers trust the agent's CA when the API
// serves HTTPS.
func (a *Agent) runExecConfig() (runexec.Config, error) {
	bin, err := os.Executable()
	if err != nil {
		return runexec.Config{}, fmt.Errorf("run executor: the sched binary: %w", err)
	}
	addr := a.cfg.Advertise.HTTP
	if addr == "" {
		addr = a.HTTPAddr()
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return runexec.Config{}, fmt.Errorf("run executor: HTTP address %q: %w", addr, err)
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	scheme := "http"
	var ca string
	if a.httpServeTLS != nil {
		scheme = "https"
		if a.cfg.TLS.CAFile != "" {
			pem, err := os.ReadFile(a.cfg.TLS.CAFile)
			if err != nil {
				return runexec.Config{}, fmt.Errorf("run executor: the CA workers trust: %w", err)
			}
			ca = string(pem)
		}
	}
	return runexec.Config{
		Store: a.store, Raft: &raftWriter{node: a.node}, Logger: a.log.With("component", "run-executor"),
		NewID: state.NewID, Command: bin, APIAddress: scheme + "://" + net.JoinHostPort(host, port), CACertPEM: ca,
	}, nil
}
