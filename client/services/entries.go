package services

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/schedhq/sched/state"
)

// Address modes of a service (Service.AddressMode). "auto" and "host"
// advertise the node (the port's host IP when the scheduler recorded
// one); "alloc" and "driver" mean the same here, since raw_exec and mock
// tasks share the node's network.
const (
	AddressModeAuto   = "auto"
	AddressModeHost   = "host"
	AddressModeAlloc  = "alloc"
	AddressModeDriver = "driver"
)

// RegistrationID is the stable ID of a service entry: the same allocation,
// owner (task, or "" for a group service), service name and port label
// always give the same ID, so a client that restarts, or retries a write,
// updates its entry instead of adding another.
func RegistrationID(allocID, task, service, portLabel string) string {
	kind, name := "task", task
	if task == "" {
		kind, name = "group", "group"
	}
	return "_sched-" + kind + "-" + allocID + "-" + name + "-" + service + "-" + portLabel
}

// Entries computes the service entries owner registers for svcs: task is
// the owning task's name, or "" for group services. Names, tags and
// addresses are interpolated with env (${NAME} for a key of env; unknown
// names stay as written). The entries come in the order of svcs.
func (m *Manager) Entries(alloc *state.Allocation, task string, svcs []*state.Service, env map[string]string) ([]*state.ServiceRegistration, error) {
	out := make([]*state.ServiceRegistration, 0, len(svcs))
	for i, s := range svcs {
		if s == nil {
			return nil, fmt.Errorf("services: service %d of %s is null", i, ownerName(alloc, task))
		}
		name := interpolate(s.Name, env)
		if name == "" {
			return nil, fmt.Errorf("services: service %d of %s has no name", i, ownerName(alloc, task))
		}
		addr, port, err := m.addressOf(alloc, task, s.PortLabel, env)
		if err != nil {
			return nil, fmt.Errorf("services: service %q of %s: %w", name, ownerName(alloc, task), err)
		}
		switch s.AddressMode {
		case "", AddressModeAuto, AddressModeHost, AddressModeAlloc, AddressModeDriver:
		default:
			return nil, fmt.Errorf("services: service %q of %s: unknown address_mode %q", name, ownerName(alloc, task), s.AddressMode)
		}
		if s.Address != "" {
			addr = interpolate(s.Address, env)
		}
		tags := make([]string, 0, len(s.Tags))
		for _, t := range s.Tags {
			tags = append(tags, interpolate(t, env))
		}
		jobID := alloc.JobID
		if jobID == "" && alloc.Job != nil {
			jobID = alloc.Job.ID
		}
		out = append(out, &state.ServiceRegistration{
			ID:          RegistrationID(alloc.ID, task, name, s.PortLabel),
			ServiceName: name,
			Namespace:   alloc.Namespace,
			NodeID:      m.cfg.NodeID,
			Datacenter:  m.cfg.Datacenter,
			JobID:       jobID,
			AllocID:     alloc.ID,
			Tags:        tags,
			Address:     addr,
			Port:        port,
		})
	}
	return out, nil
}

// addressOf finds the address and port a service or check advertises for
// label: a port label of the allocation (group ports first, then the
// task's), or a literal port number. An empty label advertises the node's
// address with port 0, as Nomad does for services without a port.
func (m *Manager) addressOf(alloc *state.Allocation, task, label string, env map[string]string) (string, int, error) {
	label = interpolate(label, env)
	if label == "" {
		return m.cfg.Address, 0, nil
	}
	if ip, port, ok := lookupPort(alloc, task, label); ok {
		if ip == "" || ip == "0.0.0.0" || ip == "::" {
			ip = m.cfg.Address
		}
		return ip, port, nil
	}
	if n, err := strconv.Atoi(label); err == nil && n > 0 && n < 65536 {
		return m.cfg.Address, n, nil
	}
	return "", 0, fmt.Errorf("port label %q is not a port of the allocation", label)
}

// lookupPort finds a port labelled label in what the scheduler granted
// alloc: the group's ports and networks, then task's networks.
func lookupPort(alloc *state.Allocation, task, label string) (ip string, port int, ok bool) {
	ar := alloc.AllocatedResources
	if ar == nil {
		return "", 0, false
	}
	for _, p := range ar.Shared.Ports {
		if p.Label == label {
			return p.HostIP, p.Value, true
		}
	}
	if ip, port, ok := portInNetworks(ar.Shared.Networks, label); ok {
		return ip, port, true
	}
	if tr := ar.Tasks[task]; tr != nil {
		if ip, port, ok := portInNetworks(tr.Networks, label); ok {
			return ip, port, true
		}
	}
	if task == "" {
		// A group service may name a port a task asked for.
		for _, tr := range ar.Tasks {
			if tr == nil {
				continue
			}
			if ip, port, ok := portInNetworks(tr.Networks, label); ok {
				return ip, port, true
			}
		}
	}
	return "", 0, false
}

func portInNetworks(nets []*state.NetworkResource, label string) (string, int, bool) {
	for _, n := range nets {
		if n == nil {
			continue
		}
		for _, ports := range [][]state.Port{n.ReservedPorts, n.DynamicPorts} {
			for _, p := range ports {
				if p.Label == label {
					return n.IP, p.Value, true
				}
			}
		}
	}
	return "", 0, false
}

// interpolate replaces ${NAME} with env[NAME]; names env does not hold are
// left as written, so a typo shows in the catalog rather than vanishing.
func interpolate(s string, env map[string]string) string {
	if !strings.Contains(s, "${") {
		return s
	}
	var b strings.Builder
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		j := strings.IndexByte(s[i:], '}')
		if j < 0 {
			b.WriteString(s)
			return b.String()
		}
		b.WriteString(s[:i])
		name := s[i+2 : i+j]
		if v, ok := env[name]; ok {
			b.WriteString(v)
		} else {
			b.WriteString(s[i : i+j+1])
		}
		s = s[i+j+1:]
	}
}

// ownerName names the owner of services in errors.
func ownerName(alloc *state.Allocation, task string) string {
	if task == "" {
		return "group " + alloc.TaskGroup + " of allocation " + alloc.ID
	}
	return "task " + task + " of allocation " + alloc.ID
}
