package agent

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

// stringList is a repeatable string flag.
type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

// RunCommand runs `sched agent` with args (the words after "agent") until
// ctx is done or the process gets SIGINT or SIGTERM, then shuts down
// cleanly. It returns the process exit code.
func RunCommand(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("agent", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		dev      = fs.Bool("dev", false, "run a single server and a client on a temporary data dir, HTTP on 127.0.0.1:4646")
		configs  stringList
		dataDir  = fs.String("data-dir", "", "data directory (overrides data_dir)")
		bind     = fs.String("bind", "", "address to bind every listener to (overrides bind_addr)")
		logLevel = fs.String("log-level", "", "trace, debug, info, warn or error (overrides log_level)")
		logFmt   = fs.String("log-format", "", "text or json (overrides log_format)")
		name     = fs.String("node", "", "server name (overrides name)")
	)
	fs.Var(&configs, "config", "HCL config file; repeatable, later files override earlier ones")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: sched agent [-dev] [-config FILE]... [options]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 1
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "agent: unexpected arguments: %s\n", strings.Join(fs.Args(), " "))
		return 1
	}

	cfg := &Config{}
	if *dev {
		cfg.applyDev()
	}
	for _, path := range configs {
		if err := cfg.LoadFile(path); err != nil {
			fmt.Fprintf(stderr, "Error loading configuration: %v\n", err)
			return 1
		}
	}
	for dst, v := range map[*string]string{&cfg.DataDir: *dataDir, &cfg.BindAddr: *bind, &cfg.LogLevel: *logLevel, &cfg.LogFormat: *logFmt, &cfg.Name: *name} {
		if v != "" {
			*dst = v
		}
	}
	if err := cfg.Finish(); err != nil {
		fmt.Fprintf(stderr, "Invalid configuration:\n%v\n", err)
		return 1
	}

	logger := NewLogger(stderr, cfg.LogFormat, cfg.LogLevel)
	prof := startStartupProfile(stderr) // startup_profile.go
	defer prof.stop()
	a, err := New(cfg, logger)
	if err != nil {
		fmt.Fprintf(stderr, "Error starting agent: %v\n", err)
		return 1
	}
	a.Start()
	prof.followAgent(a)
	printBanner(stdout, cfg, a)

	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	waitReloading(ctx, a, logger)
	fmt.Fprintln(stdout, "==> Caught signal, shutting down")
	if err := a.Shutdown(); err != nil {
		fmt.Fprintf(stderr, "Error during shutdown: %v\n", err)
		return 1
	}
	fmt.Fprintln(stdout, "==> Shutdown complete")
	return 0
}

// waitReloading waits for ctx to end, reading the TLS files again on
// each SIGHUP (a bad file is logged and the files in use stay).
func waitReloading(ctx context.Context, a *Agent, logger *slog.Logger) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
			if err := a.ReloadTLS(); err != nil {
				logger.Error("SIGHUP: reloading the TLS files failed; the ones in use stay", "error", err)
			}
		}
	}
}

func printBanner(w io.Writer, cfg *Config, a *Agent) {
	var roles []string
	if cfg.Server.Enabled {
		roles = append(roles, "server")
	}
	if cfg.Client.Enabled {
		roles = append(roles, "client")
	}
	mode := strings.Join(roles, " + ")
	if cfg.DevMode {
		mode = "dev " + mode
	}
	fmt.Fprintf(w, "==> sched agent started (%s)\n", mode)
	fmt.Fprintf(w, "       Name: %s\n", cfg.Name)
	fmt.Fprintf(w, "   HTTP API: %s\n", a.HTTPURL())
	if cfg.Server.Enabled {
		fmt.Fprintf(w, "       Raft: %s\n", cfg.RaftAddr())
	}
	if c := a.Client(); c != nil {
		fmt.Fprintf(w, "     Client: node %s, servers %s\n", c.NodeID(), strings.Join(a.clientServers(), ", "))
	}
	fmt.Fprintf(w, "   Data dir: %s\n", cfg.DataDir)
	fmt.Fprintf(w, "     Region: %s (dc %s)\n", cfg.Region, cfg.Datacenter)
	fmt.Fprintf(w, "       ACLs: %s on /v1; get a management token with `sched acl bootstrap`\n", map[bool]string{true: "enforced", false: "not enforced"}[cfg.ACL.Enabled])
	if s := a.security; s != nil && !s.DevMode && len(s.Findings) > 0 {
		fmt.Fprintf(w, "   Security: %d open door(s), each logged above with its fix (sched operator doctor; docs/security.md)\n", len(s.Findings))
	}
	if a.tmpDir != "" {
		fmt.Fprintln(w, "   Dev mode: the data dir is temporary and removed on exit")
	}
}

func slogLevel(l string) slog.Level {
	switch l {
	case "trace":
		return LevelTrace
	case "debug":
		return slog.LevelDebug
	case "warn":
		return slog.LevelWarn
	case "error":
		return slog.LevelError
	}
	return slog.LevelInfo
}
