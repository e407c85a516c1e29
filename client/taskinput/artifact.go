package taskinput

import (
	"bytes"
	"context"
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/schedhq/sched/state"
)

// Artifact fetch bounds used by FetchArtifacts.
const (
	// DefaultArtifactMaxBytes bounds one artifact: the download, a copied
	// directory, and the unpacked content of an archive, each.
	DefaultArtifactMaxBytes = 1 << 30
	// DefaultArtifactTimeout bounds fetching one artifact.
	DefaultArtifactTimeout = 10 * time.Minute
)

// ErrTooLarge reports an artifact over the fetcher's size bound.
var ErrTooLarge = errors.New("artifact exceeds the size limit")

// ArtifactError is a failed artifact fetch. The task runner records it as
// a "Downloading Artifacts" event with DownloadError (see Event).
type ArtifactError struct {
	Source string
	Err    error
}

func (e *ArtifactError) Error() string {
	return fmt.Sprintf("artifact %q: %v", e.Source, e.Err)
}

// Unwrap returns the cause.
func (e *ArtifactError) Unwrap() error { return e.Err }

// Event is the "Downloading Artifacts" failure event for e at now; the
// task runner decides FailsTask (the restart policy normally applies).
func (e *ArtifactError) Event(now time.Time) *state.TaskEvent {
	msg := "Failed to download artifacts: " + e.Error()
	return &state.TaskEvent{
		Type:           EventDownloadingArtifacts,
		Time:           now.UnixNano(),
		DownloadError:  e.Error(),
		Message:        msg,
		DisplayMessage: msg,
	}
}

// ArtifactsEvent is the "Downloading Artifacts" event emitted before the
// fetch starts.
func ArtifactsEvent(now time.Time) *state.TaskEvent {
	const msg = "Client is downloading artifacts"
	return &state.TaskEvent{Type: EventDownloadingArtifacts, Time: now.UnixNano(), Message: msg, DisplayMessage: msg}
}

// Fetcher fetches artifacts. Its zero value is usable: a plain
// http.Client and the default bounds.
type Fetcher struct {
	// Client does http(s) downloads; nil means a client with no overall
	// timeout (Timeout bounds each artifact through the context).
	Client *http.Client
	// MaxBytes bounds each artifact; zero means DefaultArtifactMaxBytes.
	MaxBytes int64
	// Timeout bounds each artifact; zero means DefaultArtifactTimeout.
	Timeout time.Duration
}

// FetchArtifacts fetches every artifact of in.Task with a zero Fetcher.
func FetchArtifacts(ctx context.Context, in *Input) error {
	var f Fetcher
	return f.FetchArtifacts(ctx, in)
}

// FetchArtifacts fetches every artifact of in.Task into the task directory,
// in order, and stops at the first failure, an *ArtifactError.
//
// Sources: file:///abs/path (or a bare absolute path) copies a file or a
// whole directory; http:// and https:// download with GetterHeaders as
// request headers. Any other scheme fails.
//
// RelativeDest (default "local/") is relative to the task directory and
// may not leave it. GetterMode:
//
//   - "any" (default): a directory source is copied into RelativeDest; an
//     archive (.tar, .tar.gz, .tgz, .zip, by the URL path) is unpacked into
//     it; any other file lands as RelativeDest/<base name of the URL path>.
//   - "file": RelativeDest is the file to write; nothing is unpacked.
//   - "dir": the source must be a directory or an archive.
//
// GetterOptions: "checksum" = "<sha256|sha512|sha1|md5>:<hex>" is verified
// on the downloaded (or copied) file before anything is unpacked, and a
// mismatch fails the fetch; "archive" = "false" keeps an archive as it is,
// and "archive" = "tar", "tar.gz", "tgz" or "zip" names the format when the
// URL does not. For http(s), a "checksum" or "archive" query parameter
// works the same way and is removed from the request URL.
func (f *Fetcher) FetchArtifacts(ctx context.Context, in *Input) error {
	if in.Task == nil {
		return nil
	}
	for _, a := range in.Task.Artifacts {
		if a == nil {
			continue
		}
		dest, err := f.fetchOne(ctx, in, a)
		if err == nil {
			err = in.ownTree(dest)
		}
		if err != nil {
			return &ArtifactError{Source: a.GetterSource, Err: err}
		}
	}
	return nil
}

func (f *Fetcher) maxBytes() int64 {
	if f.MaxBytes > 0 {
		return f.MaxBytes
	}
	return DefaultArtifactMaxBytes
}

// artifactSpec is an artifact with its options parsed.
type artifactSpec struct {
	url      *url.URL
	mode     string
	archive  string // "", "tar", "tar.gz", "zip"
	checksum *checksum
	dest     string // absolute, inside the task dir
}

// parseArtifact reads a's source and options.
func parseArtifact(in *Input, a *state.TaskArtifact) (*artifactSpec, error) {
	src := a.GetterSource
	if filepath.IsAbs(src) {
		src = "file://" + src
	}
	u, err := url.Parse(src)
	if err != nil {
		return nil, fmt.Errorf("bad source: %w", err)
	}
	opts := make(map[string]string, len(a.GetterOptions))
	for k, v := range a.GetterOptions {
		opts[k] = v
	}
	switch u.Scheme {
	case "file":
		if u.Host != "" && u.Host != "localhost" {
			return nil, fmt.Errorf("file URL with host %q: want file:///absolute/path", u.Host)
		}
	case "http", "https":
		q := u.Query()
		for _, k := range []string{"checksum", "archive"} {
			if v := q.Get(k); v != "" {
				if _, set := opts[k]; !set {
					opts[k] = v
				}
				q.Del(k)
			}
		}
		u.RawQuery = q.Encode()
	default:
		return nil, fmt.Errorf("unsupported scheme %q: want file, http or https", u.Scheme)
	}
	s := &artifactSpec{url: u, mode: a.GetterMode}
	if s.mode == "" {
		s.mode = state.DefaultArtifactMode
	}
	if s.mode != "any" && s.mode != "file" && s.mode != "dir" {
		return nil, fmt.Errorf("invalid getter mode %q: want any, file or dir", s.mode)
	}
	if c := opts["checksum"]; c != "" {
		if s.checksum, err = parseChecksum(c); err != nil {
			return nil, err
		}
	}
	switch arch := opts["archive"]; arch {
	case "false":
	case "":
		s.archive = archiveKind(u.Path)
	case "tar", "tar.gz", "zip":
		s.archive = arch
	case "tgz":
		s.archive = "tar.gz"
	default:
		return nil, fmt.Errorf("unknown archive option %q: want false, tar, tar.gz, tgz or zip", arch)
	}
	if s.mode == "file" {
		s.archive = ""
	}
	rel := a.RelativeDest
	if rel == "" {
		rel = "local/"
	}
	if s.dest, err = insideDir(in.TaskDir, rel); err != nil {
		return nil, fmt.Errorf("destination: %w", err)
	}
	return s, nil
}

// archiveKind names the archive format of a path by its extension.
func archiveKind(p string) string {
	p = strings.ToLower(p)
	switch {
	case strings.HasSuffix(p, ".tar.gz"), strings.HasSuffix(p, ".tgz"):
		return "tar.gz"
	case strings.HasSuffix(p, ".tar"):
		return "tar"
	case strings.HasSuffix(p, ".zip"):
		return "zip"
	}
	return ""
}

// fetchOne fetches one artifact within the timeout.
func (f *Fetcher) fetchOne(ctx context.Context, in *Input, a *state.TaskArtifact) (dest string, err error) {
	s, err := parseArtifact(in, a)
	if err != nil {
		return "", err
	}
	timeout := f.Timeout
	if timeout <= 0 {
		timeout = DefaultArtifactTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	if s.url.Scheme == "file" {
		info, err := os.Stat(s.url.Path)
		if err != nil {
			return "", err
		}
		if info.IsDir() {
			if s.mode == "file" {
				return "", fmt.Errorf("source is a directory but getter mode is file")
			}
			if s.checksum != nil {
				return "", fmt.Errorf("a checksum needs a file source, not a directory")
			}
			return s.dest, copyDir(ctx, s.url.Path, s.dest, f.maxBytes())
		}
	}
	// A single file: stage it in the task directory, verify, then place or
	// unpack it.
	tmp, err := os.CreateTemp(in.TaskDir, ".artifact-*")
	if err != nil {
		return "", err
	}
	defer os.Remove(tmp.Name())
	defer tmp.Close()
	if s.url.Scheme == "file" {
		err = copyFileTo(ctx, tmp, s.url.Path, f.maxBytes())
	} else {
		err = f.download(ctx, tmp, s.url, a.GetterHeaders)
	}
	if err != nil {
		return "", err
	}
	if s.checksum != nil {
		if err := s.checksum.verify(tmp); err != nil {
			return "", err
		}
	}
	switch {
	case s.archive != "":
		return s.dest, unpack(ctx, s.archive, tmp, s.dest, f.maxBytes())
	case s.mode == "dir":
		return "", fmt.Errorf("getter mode dir needs a directory or an archive source")
	case s.mode == "file":
		return s.dest, placeFile(tmp, s.dest)
	default:
		name := path.Base(s.url.Path)
		if name == "/" || name == "." || name == "" {
			return "", fmt.Errorf("cannot name the file of %q: use getter mode file", s.url.Redacted())
		}
		return s.dest, placeFile(tmp, filepath.Join(s.dest, name))
	}
}

// download GETs u into w, bounded by maxBytes.
func (f *Fetcher) download(ctx context.Context, w io.Writer, u *url.URL, headers map[string]string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return err
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	client := f.Client
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("GET %s: %s", u.Redacted(), resp.Status)
	}
	max := f.maxBytes()
	if resp.ContentLength > max {
		return fmt.Errorf("%d bytes: %w (%d)", resp.ContentLength, ErrTooLarge, max)
	}
	return copyBounded(w, resp.Body, max)
}

// copyBounded copies r to w and fails with ErrTooLarge past max bytes.
func copyBounded(w io.Writer, r io.Reader, max int64) error {
	n, err := io.Copy(w, io.LimitReader(r, max+1))
	if err != nil {
		return err
	}
	if n > max {
		return fmt.Errorf("%w (%d bytes)", ErrTooLarge, max)
	}
	return nil
}

// copyFileTo copies the file at src into w.
func copyFileTo(ctx context.Context, w io.Writer, src string, max int64) error {
	r, err := os.Open(src)
	if err != nil {
		return err
	}
	defer r.Close()
	if err := ctx.Err(); err != nil {
		return err
	}
	return copyBounded(w, r, max)
}

// placeFile moves the staged file to dest (0644), replacing what is there.
func placeFile(tmp *os.File, dest string) error {
	if err := os.MkdirAll(filepath.Dir(dest), 0o755); err != nil {
		return err
	}
	if err := tmp.Chmod(0o644); err != nil {
		return err
	}
	if err := tmp.Sync(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), dest)
}

// copyDir copies the tree at src into dest, overwriting files, keeping file
// modes. A symlink is recreated when its target is relative and stays
// inside the tree; any other symlink fails the copy.
func copyDir(ctx context.Context, src, dest string, max int64) error {
	var total int64
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		target := filepath.Join(dest, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			return os.MkdirAll(target, info.Mode().Perm()|0o700)
		case d.Type()&fs.ModeSymlink != 0:
			link, err := os.Readlink(p)
			if err != nil {
				return err
			}
			if filepath.IsAbs(link) || !filepath.IsLocal(filepath.Join(filepath.Dir(rel), link)) {
				return fmt.Errorf("symlink %s -> %s leaves the source directory", rel, link)
			}
			os.Remove(target)
			return os.Symlink(link, target)
		case !d.Type().IsRegular():
			return fmt.Errorf("%s is not a regular file", rel)
		}
		total += info.Size()
		if total > max {
			return fmt.Errorf("%w (%d bytes)", ErrTooLarge, max)
		}
		r, err := os.Open(p)
		if err != nil {
			return err
		}
		defer r.Close()
		return writeFileFrom(target, r, info.Mode().Perm(), max)
	})
}

// writeFileFrom replaces path with the content of r, at most max bytes.
func writeFileFrom(path string, r io.Reader, perm os.FileMode, max int64) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if err := copyBounded(f, r, max); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Chmod(f.Name(), perm); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}

// checksum is a parsed "type:hex" option.
type checksum struct {
	kind string
	want []byte
	new  func() hash.Hash
}

// parseChecksum reads "sha256:<hex>" (or md5, sha1, sha512).
func parseChecksum(s string) (*checksum, error) {
	kind, hexSum, ok := strings.Cut(s, ":")
	if !ok {
		return nil, fmt.Errorf("checksum %q: want <type>:<hex>", s)
	}
	c := &checksum{kind: strings.ToLower(kind)}
	var size int
	switch c.kind {
	case "md5":
		c.new, size = md5.New, md5.Size
	case "sha1":
		c.new, size = sha1.New, sha1.Size
	case "sha256":
		c.new, size = sha256.New, sha256.Size
	case "sha512":
		c.new, size = sha512.New, sha512.Size
	default:
		return nil, fmt.Errorf("checksum type %q: want md5, sha1, sha256 or sha512", kind)
	}
	want, err := hex.DecodeString(hexSum)
	if err != nil || len(want) != size {
		return nil, fmt.Errorf("checksum %q: not a %s digest in hex", s, c.kind)
	}
	c.want = want
	return c, nil
}

// ErrChecksum reports an artifact whose checksum does not match.
var ErrChecksum = errors.New("checksum mismatch")

// verify hashes f from its start.
func (c *checksum) verify(f *os.File) error {
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	h := c.new()
	if _, err := io.Copy(h, f); err != nil {
		return err
	}
	if got := h.Sum(nil); !bytes.Equal(got, c.want) {
		return fmt.Errorf("%w: %s is %x, want %x", ErrChecksum, c.kind, got, c.want)
	}
	return nil
}
