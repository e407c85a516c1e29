package mgmt

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"
	"time"
)

// Configuration versions hold the Terraform configuration a run plans:
// a gzipped tarball uploaded to the version's upload URL. The archive is
// kept as a blob (StateBlob, content-addressed) once it passed
// CheckConfigurationArchive.

// PrefixConfigurationVersion is the ID prefix of configuration versions.
const PrefixConfigurationVersion = "cv-"

// Configuration version statuses (go-tfe ConfigurationStatus).
const (
	ConfigurationPending  = "pending"
	ConfigurationUploaded = "uploaded"
)

// Bounds of configuration archives.
const (
	// DefaultMaxConfigurationBytes bounds an archive as uploaded.
	DefaultMaxConfigurationBytes = 10 << 20
	// MaxConfigurationUnpackedBytes bounds the sum of its files' sizes.
	MaxConfigurationUnpackedBytes = 100 << 20
	// MaxConfigurationEntries bounds its entries.
	MaxConfigurationEntries = 10000
	// MaxConfigurationPathLen bounds one entry's name.
	MaxConfigurationPathLen = 1024
)

// ConfigurationVersion is one uploaded (or awaited) configuration of a
// workspace.
type ConfigurationVersion struct {
	// ID is "cv-<id>".
	ID               string
	WorkspaceID      string
	OrganizationName string
	Status           string
	AutoQueueRuns    bool
	Speculative      bool
	Provisional      bool
	// ArchiveSHA256 names the archive's blob once uploaded; Size is its
	// length.
	ArchiveSHA256 string
	Size          int64
	// UploadSecret authorizes the PUT of the upload URL, which go-tfe
	// sends without its token.
	UploadSecret string
	CreatedBy    string
	CreatedAt    time.Time
	UploadedAt   time.Time
	CreateIndex  uint64
	ModifyIndex  uint64
}

// CheckConfigurationArchive checks a configuration upload: a gzipped tar
// whose entries are regular files, directories and symbolic links, with
// relative paths that stay inside the archive (no absolute path, no "..",
// no link pointing out), at most MaxConfigurationEntries entries and
// MaxConfigurationUnpackedBytes unpacked. The error names the entry.
func CheckConfigurationArchive(data []byte) error {
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return fmt.Errorf("is not a gzip archive: %v", err)
	}
	tr := tar.NewReader(zr)
	var entries int
	var unpacked int64
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("is not a tar archive: %v", err)
		}
		entries++
		if entries > MaxConfigurationEntries {
			return fmt.Errorf("has more than %d entries", MaxConfigurationEntries)
		}
		if err := checkArchivePath(h.Name); err != nil {
			return fmt.Errorf("entry %q %v", truncate(h.Name), err)
		}
		switch h.Typeflag {
		case tar.TypeReg, tar.TypeDir:
		case tar.TypeSymlink, tar.TypeLink:
			target := h.Linkname
			if h.Typeflag == tar.TypeSymlink && !path.IsAbs(target) {
				target = path.Join(path.Dir(strings.TrimPrefix(h.Name, "./")), target)
			}
			if err := checkArchivePath(target); err != nil {
				return fmt.Errorf("entry %q links to %q, which %v", truncate(h.Name), truncate(h.Linkname), err)
			}
		case tar.TypeXGlobalHeader:
		default:
			return fmt.Errorf("entry %q is of type %q: only files, directories and links are allowed", truncate(h.Name), string(h.Typeflag))
		}
		unpacked += max(h.Size, 0)
		if unpacked > MaxConfigurationUnpackedBytes {
			return fmt.Errorf("unpacks to more than %d bytes", MaxConfigurationUnpackedBytes)
		}
		// Read the entry so that a truncated archive is found here.
		if _, err := io.Copy(io.Discard, io.LimitReader(tr, MaxConfigurationUnpackedBytes)); err != nil {
			return fmt.Errorf("entry %q is truncated: %v", truncate(h.Name), err)
		}
	}
	if entries == 0 {
		return fmt.Errorf("has no entries")
	}
	return nil
}

// checkArchivePath says why p may not name an entry of a configuration,
// nil when it may.
func checkArchivePath(p string) error {
	switch {
	case p == "":
		return fmt.Errorf("has an empty name")
	case len(p) > MaxConfigurationPathLen:
		return fmt.Errorf("is longer than %d bytes", MaxConfigurationPathLen)
	case strings.ContainsRune(p, 0) || strings.Contains(p, "\\"):
		return fmt.Errorf("holds a NUL or a backslash")
	case path.IsAbs(p):
		return fmt.Errorf("is an absolute path")
	}
	clean := path.Clean(p)
	if clean == ".." || strings.HasPrefix(clean, "../") {
		return fmt.Errorf("escapes the configuration's directory")
	}
	for _, seg := range strings.Split(p, "/") {
		if seg == ".." {
			return fmt.Errorf("escapes the configuration's directory (has a .. segment)")
		}
	}
	return nil
}

func truncate(s string) string {
	if len(s) > 100 {
		return s[:100] + "…"
	}
	return s
}
