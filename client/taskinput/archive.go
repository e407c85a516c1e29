package taskinput

import (
	"archive/tar"
	"archive/zip"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// unpack extracts the archive in f (of kind "tar", "tar.gz" or "zip") into
// dest. Entries are regular files and directories; an entry whose name
// leaves dest, a link, or a device fails the unpack (an archive must not
// write outside the task directory). The extracted content is bounded by
// max bytes in total.
func unpack(ctx context.Context, kind string, f *os.File, dest string, max int64) error {
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	if err := os.MkdirAll(dest, 0o755); err != nil {
		return err
	}
	b := &budget{left: max}
	switch kind {
	case "tar":
		return untar(ctx, f, dest, b)
	case "tar.gz":
		zr, err := gzip.NewReader(f)
		if err != nil {
			return fmt.Errorf("gzip: %w", err)
		}
		defer zr.Close()
		return untar(ctx, zr, dest, b)
	case "zip":
		info, err := f.Stat()
		if err != nil {
			return err
		}
		return unzip(ctx, f, info.Size(), dest, b)
	}
	return fmt.Errorf("unknown archive kind %q", kind)
}

// budget is the number of bytes an unpack may still write.
type budget struct{ left int64 }

// entryPath is where an archive entry named name lands under dest.
func entryPath(dest, name string) (string, error) {
	clean := filepath.Clean(filepath.FromSlash(name))
	if clean == "." {
		return dest, nil
	}
	if !filepath.IsLocal(clean) {
		return "", fmt.Errorf("archive entry %q: %w", name, ErrEscapes)
	}
	return insideDir(dest, clean)
}

// untar extracts a tar stream.
func untar(ctx context.Context, r io.Reader, dest string, b *budget) error {
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("tar: %w", err)
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		target, err := entryPath(dest, h.Name)
		if err != nil {
			return err
		}
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(target, h.FileInfo().Mode().Perm()|0o700); err != nil {
				return err
			}
		case tar.TypeReg:
			if err := extractFile(target, tr, h.FileInfo().Mode().Perm(), b); err != nil {
				return fmt.Errorf("tar entry %q: %w", h.Name, err)
			}
		case tar.TypeXGlobalHeader:
		default:
			return fmt.Errorf("tar entry %q: type %q is not a file or directory", h.Name, h.Typeflag)
		}
	}
}

// unzip extracts a zip file.
func unzip(ctx context.Context, r io.ReaderAt, size int64, dest string, b *budget) error {
	zr, err := zip.NewReader(r, size)
	if err != nil {
		return fmt.Errorf("zip: %w", err)
	}
	for _, zf := range zr.File {
		if err := ctx.Err(); err != nil {
			return err
		}
		target, err := entryPath(dest, zf.Name)
		if err != nil {
			return err
		}
		mode := zf.Mode()
		switch {
		case mode.IsDir():
			if err := os.MkdirAll(target, mode.Perm()|0o700); err != nil {
				return err
			}
		case mode.IsRegular():
			if err := extractZipFile(zf, target, b); err != nil {
				return fmt.Errorf("zip entry %q: %w", zf.Name, err)
			}
		default:
			return fmt.Errorf("zip entry %q: mode %s is not a file or directory", zf.Name, mode)
		}
	}
	return nil
}

func extractZipFile(zf *zip.File, target string, b *budget) error {
	rc, err := zf.Open()
	if err != nil {
		return err
	}
	defer rc.Close()
	return extractFile(target, rc, zf.Mode().Perm(), b)
}

// extractFile writes one entry, charging its size to b.
func extractFile(target string, r io.Reader, perm os.FileMode, b *budget) error {
	if perm == 0 {
		perm = 0o644
	}
	cr := &countingReader{r: r}
	err := writeFileFrom(target, cr, perm, b.left)
	b.left -= cr.n
	return err
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}
