package taskinput

import (
	"fmt"
	"os"
)

// WriteDispatchPayload writes in.Payload to local/<DispatchPayload.File>
// (relative to in.LocalDir, which it creates) with mode 0644, atomically.
// It does nothing when the task has no DispatchPayload block. An empty
// payload (an optional payload not given) still writes an empty file, so a
// task can rely on the file existing.
func WriteDispatchPayload(in *Input) error {
	if in.Task == nil || in.Task.DispatchPayload == nil || in.Task.DispatchPayload.File == "" {
		return nil
	}
	if err := os.MkdirAll(in.LocalDir, 0o755); err != nil {
		return fmt.Errorf("dispatch payload: %w", err)
	}
	dest, err := insideDir(in.LocalDir, in.Task.DispatchPayload.File)
	if err != nil {
		return fmt.Errorf("dispatch payload: %w", err)
	}
	if err := writeAtomic(dest, in.Payload, 0o644, in.own); err != nil {
		return fmt.Errorf("dispatch payload: %w", err)
	}
	return nil
}
