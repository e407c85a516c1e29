package raft

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/hashicorp/go-hclog"
)

// removeUnfinishedSnapshots deletes the snapshots a crash left half
// written in dir's snapshot store. hashicorp/raft writes a snapshot into
// a folder named "<id>.tmp" and renames it when complete; one interrupted
// by a crash stays, is never read, never reaped, and at a million
// allocations holds hundreds of megabytes. It runs before the store
// opens, with the log store's lock held, so no snapshot of this server is
// being written.
func removeUnfinishedSnapshots(dir string, logger hclog.Logger) {
	snaps := filepath.Join(dir, "snapshots")
	entries, err := os.ReadDir(snaps)
	if err != nil {
		return // no store yet, or unreadable: the store will say
	}
	for _, e := range entries {
		if !e.IsDir() || !strings.HasSuffix(e.Name(), ".tmp") {
			continue
		}
		path := filepath.Join(snaps, e.Name())
		if err := os.RemoveAll(path); err != nil {
			logger.Warn("could not remove an unfinished snapshot", "path", path, "error", err)
			continue
		}
		logger.Info("removed a snapshot a crash left unfinished", "path", path)
	}
}
