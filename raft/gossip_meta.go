package raft

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/hashicorp/memberlist"
)

// ServerMeta is what a server tells the others about itself through gossip:
// enough to add it to the Raft configuration, to forward requests to it,
// and to decide together when the cluster may bootstrap.
type ServerMeta struct {
	// ID is the server's Raft ID; it is also its gossip node name.
	ID string
	// Name is the operator's name for the server (config `name`).
	Name string
	// RaftAddr is the address other servers' Raft transports dial.
	RaftAddr string
	// HTTPAddr is the host:port of the server's HTTP API, where followers
	// forward writes and ask for the read index.
	HTTPAddr   string
	Region     string
	Datacenter string
	// BootstrapExpect is the server's bootstrap_expect. Only servers that
	// agree on it bootstrap together.
	BootstrapExpect int
	// Build is the server's version, shown by `sched server members`.
	Build string
	// Leaving is set by Gossip.Leave just before the server departs, so
	// the others record a departure rather than a failure.
	Leaving bool
}

// metaVersion is the first byte of encoded metadata. A server that reads a
// version it does not know treats the member as foreign and ignores it.
const metaVersion = 1

// Field tags of the encoded metadata. Each field is a tag byte, a uvarint
// length and the bytes; unknown tags are skipped, so a newer server may add
// fields without confusing an older one during a rolling upgrade.
const (
	metaTagID byte = iota + 1
	metaTagName
	metaTagRaftAddr
	metaTagHTTPAddr
	metaTagRegion
	metaTagDatacenter
	metaTagExpect
	metaTagBuild
	metaTagLeaving
)

// MaxMetaSize is memberlist's limit on a node's metadata.
const MaxMetaSize = memberlist.MetaMaxSize

// encodeMeta packs m compactly: a typical server's metadata is about 120
// bytes, far below memberlist's 512. It fails rather than truncate.
func encodeMeta(m ServerMeta) ([]byte, error) {
	buf := []byte{metaVersion}
	str := func(tag byte, s string) {
		if s == "" {
			return
		}
		buf = append(buf, tag)
		buf = binary.AppendUvarint(buf, uint64(len(s)))
		buf = append(buf, s...)
	}
	str(metaTagID, m.ID)
	str(metaTagName, m.Name)
	str(metaTagRaftAddr, m.RaftAddr)
	str(metaTagHTTPAddr, m.HTTPAddr)
	str(metaTagRegion, m.Region)
	str(metaTagDatacenter, m.Datacenter)
	if m.BootstrapExpect > 0 {
		var v []byte
		v = binary.AppendUvarint(v, uint64(m.BootstrapExpect))
		str(metaTagExpect, string(v))
	}
	str(metaTagBuild, m.Build)
	if m.Leaving {
		str(metaTagLeaving, "1")
	}
	if len(buf) > MaxMetaSize {
		return nil, fmt.Errorf("raft: gossip metadata is %d bytes, over memberlist's limit of %d (shorten the server name or addresses)", len(buf), MaxMetaSize)
	}
	return buf, nil
}

// errForeignMeta marks metadata this version cannot read.
var errForeignMeta = errors.New("raft: gossip metadata of an unknown version")

// decodeMeta is encodeMeta's inverse.
func decodeMeta(b []byte) (ServerMeta, error) {
	var m ServerMeta
	if len(b) == 0 || b[0] != metaVersion {
		return m, errForeignMeta
	}
	b = b[1:]
	for len(b) > 0 {
		tag := b[0]
		n, w := binary.Uvarint(b[1:])
		if w <= 0 || uint64(len(b)-1-w) < n {
			return m, errors.New("raft: truncated gossip metadata")
		}
		v := b[1+w : 1+w+int(n)]
		b = b[1+w+int(n):]
		switch tag {
		case metaTagID:
			m.ID = string(v)
		case metaTagName:
			m.Name = string(v)
		case metaTagRaftAddr:
			m.RaftAddr = string(v)
		case metaTagHTTPAddr:
			m.HTTPAddr = string(v)
		case metaTagRegion:
			m.Region = string(v)
		case metaTagDatacenter:
			m.Datacenter = string(v)
		case metaTagExpect:
			e, ew := binary.Uvarint(v)
			if ew <= 0 || e > 1<<16 {
				return m, errors.New("raft: bad bootstrap_expect in gossip metadata")
			}
			m.BootstrapExpect = int(e)
		case metaTagBuild:
			m.Build = string(v)
		case metaTagLeaving:
			m.Leaving = string(v) == "1"
		}
	}
	if m.ID == "" {
		return m, errors.New("raft: gossip metadata without a server ID")
	}
	return m, nil
}
