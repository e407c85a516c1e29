package docker

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/schedhq/sched/client/driver"
	"github.com/schedhq/sched/state"
)

// Bounds on a task's config: anything larger is refused by name.
const (
	maxListLen    = 64   // args, entrypoint, ports, volumes, mounts, caps, labels
	maxStringLen  = 4096 // any one string
	maxPullTimout = time.Hour
)

// taskConfig is a docker task's `config` block, checked.
type taskConfig struct {
	Image            string
	Command          string
	Args             []string
	Entrypoint       []string
	WorkDir          string
	Ports            []string
	Volumes          []string
	Mounts           []mountConfig
	Labels           map[string]string
	ForcePull        bool
	Auth             *authConfig
	NetworkMode      string
	Privileged       bool
	CapAdd, CapDrop  []string
	ImagePullTimeout time.Duration
}

// mountConfig is one `mount` block.
type mountConfig struct {
	Type     string // bind (default), volume or tmpfs
	Source   string
	Target   string
	ReadOnly bool
}

// authConfig is the `auth` block: registry credentials for the pull.
type authConfig struct {
	Username, Password, Email, ServerAddress string
}

// encode is the X-Registry-Auth value of the pull.
func (a *authConfig) encode() string {
	if a == nil {
		return ""
	}
	b, _ := json.Marshal(map[string]string{"username": a.Username, "password": a.Password,
		"email": a.Email, "serveraddress": a.ServerAddress})
	return base64.URLEncoding.EncodeToString(b)
}

// knownKeys are the config keys this driver reads; any other is an error,
// so a misspelt key does not go unnoticed.
var knownKeys = []string{"image", "command", "args", "entrypoint", "work_dir", "ports", "volumes",
	"mount", "labels", "force_pull", "auth", "network_mode", "privileged", "cap_add", "cap_drop",
	"image_pull_timeout"}

// networkModeRE: bridge, host, none, default, a user-defined network's
// name, or container:<name or id>.
var networkModeRE = regexp.MustCompile(`^(container:)?[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$`)

// capRE is a capability name, with or without its CAP_ prefix.
var capRE = regexp.MustCompile(`^[A-Za-z_]{2,40}$`)

// parseTaskConfig reads and checks cfg against the client's policy. Every
// error wraps driver.ErrBadConfig and names the key.
func parseTaskConfig(cfg map[string]any, pol *Config) (*taskConfig, error) {
	var unknown []string
	for k := range cfg {
		if !slices.Contains(knownKeys, k) {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		return nil, bad("unknown key(s) %s (the docker driver reads %s)", strings.Join(unknown, ", "), strings.Join(knownKeys, ", "))
	}
	tc := &taskConfig{}
	var err error
	str := func(key string, dst *string) {
		if err == nil {
			*dst, err = getString(cfg, key)
		}
	}
	list := func(key string, dst *[]string) {
		if err == nil {
			*dst, err = getStrings(cfg, key)
		}
	}
	boolean := func(key string, dst *bool) {
		if err == nil {
			*dst, err = getBool(cfg, key)
		}
	}
	str("image", &tc.Image)
	str("command", &tc.Command)
	list("args", &tc.Args)
	list("entrypoint", &tc.Entrypoint)
	str("work_dir", &tc.WorkDir)
	list("ports", &tc.Ports)
	list("volumes", &tc.Volumes)
	boolean("force_pull", &tc.ForcePull)
	str("network_mode", &tc.NetworkMode)
	boolean("privileged", &tc.Privileged)
	list("cap_add", &tc.CapAdd)
	list("cap_drop", &tc.CapDrop)
	if err != nil {
		return nil, err
	}
	if tc.Image == "" {
		return nil, bad("image is required")
	}
	if strings.ContainsAny(tc.Image, " \t\n") {
		return nil, bad("image %q is not an image reference", tc.Image)
	}
	if tc.Labels, err = getLabels(cfg); err != nil {
		return nil, err
	}
	if tc.Mounts, err = getMounts(cfg); err != nil {
		return nil, err
	}
	if tc.Auth, err = getAuth(cfg); err != nil {
		return nil, err
	}
	if v, ok := cfg["image_pull_timeout"]; ok && v != nil {
		s, isStr := v.(string)
		d, perr := time.ParseDuration(s)
		if !isStr || perr != nil || d <= 0 || d > maxPullTimout {
			return nil, bad("image_pull_timeout %v is not a duration between 1s and %v, such as \"5m\"", v, maxPullTimout)
		}
		tc.ImagePullTimeout = d
	}
	if tc.NetworkMode != "" && !networkModeRE.MatchString(tc.NetworkMode) {
		return nil, bad("network_mode %q is not bridge, host, none, a network's name or container:<name>", tc.NetworkMode)
	}
	for _, v := range tc.Volumes {
		if _, _, _, err := splitVolume(v); err != nil {
			return nil, err
		}
	}
	if tc.Privileged && !pol.AllowPrivileged {
		return nil, bad("privileged containers are not allowed on this client (client.docker.allow_privileged is false)")
	}
	for _, c := range tc.CapAdd {
		if !capRE.MatchString(c) {
			return nil, bad("cap_add: %q is not a capability name", c)
		}
		if !pol.capAllowed(c) {
			return nil, bad("cap_add: %s is not in this client's allowed capabilities (client.docker.allow_caps: %s)", c, strings.Join(pol.allowCaps(), ", "))
		}
	}
	for _, c := range tc.CapDrop {
		if !capRE.MatchString(c) {
			return nil, bad("cap_drop: %q is not a capability name", c)
		}
	}
	return tc, nil
}

// bad is a driver.ErrBadConfig with a message.
func bad(format string, args ...any) error {
	return fmt.Errorf("%w: docker: %s", driver.ErrBadConfig, fmt.Sprintf(format, args...))
}

func getString(cfg map[string]any, key string) (string, error) {
	v, ok := cfg[key]
	if !ok || v == nil {
		return "", nil
	}
	s, ok := v.(string)
	if !ok {
		return "", bad("%s must be a string, not %T", key, v)
	}
	if len(s) > maxStringLen {
		return "", bad("%s is longer than %d bytes", key, maxStringLen)
	}
	return s, nil
}

func getStrings(cfg map[string]any, key string) ([]string, error) {
	v, ok := cfg[key]
	if !ok || v == nil {
		return nil, nil
	}
	var out []string
	switch x := v.(type) {
	case string:
		out = []string{x}
	case []string:
		out = slices.Clone(x)
	case []any:
		for i, e := range x {
			switch s := e.(type) {
			case string:
				out = append(out, s)
			case int, int64, uint64, float64, bool:
				out = append(out, fmt.Sprint(s))
			default:
				return nil, bad("%s[%d] must be a string, not %T", key, i, e)
			}
		}
	default:
		return nil, bad("%s must be a list of strings, not %T", key, v)
	}
	if len(out) > maxListLen {
		return nil, bad("%s has %d entries, more than %d", key, len(out), maxListLen)
	}
	for i, s := range out {
		if len(s) > maxStringLen {
			return nil, bad("%s[%d] is longer than %d bytes", key, i, maxStringLen)
		}
	}
	return out, nil
}

func getBool(cfg map[string]any, key string) (bool, error) {
	v, ok := cfg[key]
	if !ok || v == nil {
		return false, nil
	}
	switch x := v.(type) {
	case bool:
		return x, nil
	case string:
		b, err := strconv.ParseBool(x)
		if err == nil {
			return b, nil
		}
	}
	return false, bad("%s must be true or false, not %v", key, v)
}

// blocks reads a key that holds one block or a list of them (HCL blocks
// decode as a list of maps; JSON may give one map).
func blocks(cfg map[string]any, key string) ([]map[string]any, error) {
	v, ok := cfg[key]
	if !ok || v == nil {
		return nil, nil
	}
	switch x := v.(type) {
	case map[string]any:
		return []map[string]any{x}, nil
	case []map[string]any:
		return x, nil
	case []any:
		if len(x) > maxListLen {
			return nil, bad("%s has %d blocks, more than %d", key, len(x), maxListLen)
		}
		out := make([]map[string]any, 0, len(x))
		for i, e := range x {
			m, ok := e.(map[string]any)
			if !ok {
				return nil, bad("%s[%d] must be a block, not %T", key, i, e)
			}
			out = append(out, m)
		}
		return out, nil
	}
	return nil, bad("%s must be a block, not %T", key, v)
}

func getLabels(cfg map[string]any) (map[string]string, error) {
	bs, err := blocks(cfg, "labels")
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, b := range bs {
		for k, v := range b {
			s, ok := v.(string)
			if !ok {
				s = fmt.Sprint(v)
			}
			if strings.HasPrefix(k, labelPrefix) {
				return nil, bad("labels: %q uses the prefix %q, which sched keeps for its own labels", k, labelPrefix)
			}
			if len(k) > maxStringLen || len(s) > maxStringLen {
				return nil, bad("labels: %q is longer than %d bytes", k, maxStringLen)
			}
			out[k] = s
		}
	}
	if len(out) > maxListLen {
		return nil, bad("labels has %d entries, more than %d", len(out), maxListLen)
	}
	return out, nil
}

func getMounts(cfg map[string]any) ([]mountConfig, error) {
	bs, err := blocks(cfg, "mount")
	if err != nil {
		return nil, err
	}
	var out []mountConfig
	for i, b := range bs {
		m := mountConfig{Type: "bind"}
		for k := range b {
			if !slices.Contains([]string{"type", "source", "target", "readonly"}, k) {
				return nil, bad("mount[%d]: unknown key %q (type, source, target, readonly)", i, k)
			}
		}
		var err error
		if t, e := getString(b, "type"); e != nil {
			err = e
		} else if t != "" {
			m.Type = t
		}
		if err == nil {
			m.Source, err = getString(b, "source")
		}
		if err == nil {
			m.Target, err = getString(b, "target")
		}
		if err == nil {
			m.ReadOnly, err = getBool(b, "readonly")
		}
		if err != nil {
			return nil, fmt.Errorf("mount[%d]: %w", i, err)
		}
		if !slices.Contains([]string{"bind", "volume", "tmpfs"}, m.Type) {
			return nil, bad("mount[%d]: type %q is not bind, volume or tmpfs", i, m.Type)
		}
		if !strings.HasPrefix(m.Target, "/") {
			return nil, bad("mount[%d]: target %q must be an absolute path in the container", i, m.Target)
		}
		if m.Type != "tmpfs" && m.Source == "" {
			return nil, bad("mount[%d]: a %s mount needs a source", i, m.Type)
		}
		out = append(out, m)
	}
	return out, nil
}

func getAuth(cfg map[string]any) (*authConfig, error) {
	bs, err := blocks(cfg, "auth")
	if err != nil || len(bs) == 0 {
		return nil, err
	}
	if len(bs) > 1 {
		return nil, bad("auth is given %d times; give it once", len(bs))
	}
	a := &authConfig{}
	for k := range bs[0] {
		if !slices.Contains([]string{"username", "password", "email", "server_address"}, k) {
			return nil, bad("auth: unknown key %q (username, password, email, server_address)", k)
		}
	}
	for key, dst := range map[string]*string{"username": &a.Username, "password": &a.Password,
		"email": &a.Email, "server_address": &a.ServerAddress} {
		if *dst, err = getString(bs[0], key); err != nil {
			return nil, fmt.Errorf("auth: %w", err)
		}
	}
	return a, nil
}

// splitVolume reads "source:target[:ro|rw]".
func splitVolume(v string) (src, dst string, ro bool, err error) {
	parts := strings.Split(v, ":")
	if len(parts) < 2 || len(parts) > 3 || parts[0] == "" || !strings.HasPrefix(parts[1], "/") {
		return "", "", false, bad("volumes: %q is not \"source:/target\" or \"source:/target:ro\"", v)
	}
	if len(parts) == 3 {
		switch parts[2] {
		case "ro":
			ro = true
		case "rw":
		default:
			return "", "", false, bad("volumes: %q: mode %q is not ro or rw", v, parts[2])
		}
	}
	return parts[0], parts[1], ro, nil
}

// portBindings maps each label of ports to the allocation's port of that
// label: the container port is the port's `to` (its host value when `to`
// is not set), on TCP and UDP alike, bound to the host port.
func portBindings(labels []string, ports []state.AllocatedPort) ([]boundPort, error) {
	byLabel := make(map[string]state.AllocatedPort, len(ports))
	for _, p := range ports {
		byLabel[p.Label] = p
	}
	out := make([]boundPort, 0, len(labels))
	for _, l := range labels {
		p, ok := byLabel[l]
		if !ok {
			have := slices.Sorted(maps.Keys(byLabel))
			return nil, bad("ports: %q is not a port of the group's network (it has %v)", l, have)
		}
		to := p.To
		if to <= 0 {
			to = p.Value
		}
		out = append(out, boundPort{Label: l, HostIP: p.HostIP, Host: p.Value, Container: to})
	}
	return out, nil
}

// boundPort is one mapped port.
type boundPort struct {
	Label           string
	HostIP          string
	Host, Container int
}
