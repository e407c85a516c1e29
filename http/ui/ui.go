// Package ui is sched's web UI: static files (HTML, CSS and JavaScript
// modules, no build step) embedded in the binary and served under /ui/ by
// every server agent. The pages run in the browser and call the jobs API
// (/v1) and the management API (/api/v2) of the agent that served them,
// with the token the user signed in with; this package itself reads no
// state and needs no token.
//
// Wrap puts the UI in front of the agent's API handler: /ui/ serves the
// files, / redirects to /ui/, and every other path goes to the API.
//
// The index page names its files under a versioned path,
// /ui/v/BUILD/NAME, where BUILD is a hash of every file's content
// (Build): the browser keeps those for a year without asking again
// (Cache-Control immutable), and a binary with other files has another
// BUILD, so its index names new URLs. The index itself and the plain
// /ui/NAME paths are revalidated on each load (Last-Modified).
package ui

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"net/http"
	"path"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"
)

// Prefix is the path the UI is served under.
const Prefix = "/ui/"

//go:embed static
var files embed.FS

// static is the embedded tree with "static/" stripped.
var static = func() fs.FS {
	sub, err := fs.Sub(files, "static")
	if err != nil {
		panic(err)
	}
	return sub
}()

// contentTypes are the types of the file kinds the UI ships; a file of
// any other kind is not served.
var contentTypes = map[string]string{
	".html": "text/html; charset=utf-8",
	".js":   "text/javascript; charset=utf-8",
	".css":  "text/css; charset=utf-8",
	".svg":  "image/svg+xml",
	".png":  "image/png",
}

// pages are the first path segments of the UI's routes (js/app.js): a
// path below Prefix that starts with one and names no file serves
// index.html, whose router then shows that page, so /ui/jobs is the page
// of #/jobs. ui_test.go checks that every route of app.js is here.
var pages = map[string]bool{
	"signin": true, "jobs": true, "job": true, "alloc": true, "nodes": true, "node": true,
	"topology": true, "evals": true, "eval": true, "services": true, "service": true,
	"orgs": true, "org": true, "project": true, "admin": true, "workspace": true, "run": true, "quotas": true,
}

// favicon is the path browsers ask for an icon when a page names none;
// the UI's pages name /ui/favicon.svg, and Wrap answers this one with it.
const favicon = "/favicon.ico"

// csp allows the pages nothing from outside the agent: scripts, styles,
// images and API calls come from the same origin, inline scripts and
// inline style attributes are refused, and no other site may frame them.
const csp = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// versioned is the path segment under Prefix of the versioned files:
// /ui/v/BUILD/NAME.
const versioned = "v/"

// immutable is the Cache-Control of a file under the current build's
// versioned path: its content never changes at that URL.
const immutable = "public, max-age=31536000, immutable"

// modTime is the Last-Modified of every file: embedded files carry none,
// so the process start stands in for the build.
var modTime = time.Now().UTC().Truncate(time.Second)

// Handler serves the UI's files under Prefix. /ui/ (and /ui) serve
// index.html, and so does a path under one of the UI's pages (/ui/jobs,
// /ui/job/default/web); any other path that names no file is a 404; only
// GET and HEAD are served.
func Handler() http.Handler {
	return http.HandlerFunc(serve)
}

func serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method "+r.Method+" not allowed on "+r.URL.Path, http.StatusMethodNotAllowed)
		return
	}
	name, ok := fileName(r.URL.Path)
	if !ok {
		http.Error(w, "no such page: "+r.URL.Path, http.StatusNotFound)
		return
	}
	// Files change only with the binary: revalidate with Last-Modified,
	// but for a versioned path of this build, which never changes.
	cache := "no-cache"
	if rest, ok := strings.CutPrefix(name, versioned); ok {
		build, file, _ := strings.Cut(rest, "/")
		a, found := assets()[file]
		if !found || file == "index.html" {
			http.Error(w, "no such page: "+r.URL.Path, http.StatusNotFound)
			return
		}
		// Another build's path (a page loaded before the agent was
		// upgraded) gets this build's file, revalidated: a 404 would
		// break that page for sure.
		if build == Build() {
			cache = immutable
		}
		send(w, r, file, a, cache)
		return
	}
	a, ok := assets()[name]
	if !ok && isPage(name) {
		a, ok = assets()["index.html"], true
	}
	if !ok {
		http.Error(w, "no such page: "+r.URL.Path, http.StatusNotFound)
		return
	}
	send(w, r, name, a, cache)
}

// send writes a (served as name) with its headers; cache is its
// Cache-Control.
func send(w http.ResponseWriter, r *http.Request, name string, a asset, cache string) {
	h := w.Header()
	h.Set("Content-Type", a.ctype)
	h.Set("Vary", "Accept-Encoding")
	body := a.body
	if a.gz != nil && acceptsGzip(r) {
		h.Set("Content-Encoding", "gzip")
		body = a.gz
	}
	h.Set("Content-Security-Policy", csp)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", cache)
	http.ServeContent(w, r, name, modTime, bytes.NewReader(body))
}

// fileName maps a request path below Prefix to a file of the embedded
// tree; ok is false for anything outside it.
func fileName(p string) (string, bool) {
	if p == "/ui" || p == Prefix {
		return "index.html", true
	}
	rest, ok := strings.CutPrefix(p, Prefix)
	if !ok || rest == "" || strings.HasSuffix(rest, "/") {
		return "", false
	}
	if !fs.ValidPath(rest) {
		return "", false
	}
	return rest, true
}

// isPage reports whether name (a path below Prefix that names no file) is
// one of the UI's pages.
func isPage(name string) bool {
	first, _, _ := strings.Cut(name, "/")
	return pages[first]
}

// Wrap returns a handler that serves the UI under Prefix, redirects a GET
// or HEAD of / to it, answers /favicon.ico with the UI's icon, and hands
// every other request to api unchanged.
func Wrap(api http.Handler) http.Handler {
	ui := Handler()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch p := r.URL.Path; {
		case p == "/" && (r.Method == http.MethodGet || r.Method == http.MethodHead):
			http.Redirect(w, r, Prefix, http.StatusTemporaryRedirect)
		case p == "/ui" || strings.HasPrefix(p, Prefix):
			ui.ServeHTTP(w, r)
		case p == favicon && (r.Method == http.MethodGet || r.Method == http.MethodHead):
			r2 := r.Clone(r.Context())
			r2.URL.Path = Prefix + "favicon.svg"
			ui.ServeHTTP(w, r2)
		default:
			api.ServeHTTP(w, r)
		}
	})
}

// asset is one servable file: its bytes, gzipped when that saves
// anything, and its type.
type asset struct {
	body, gz []byte
	ctype    string
}

// tree is the servable files by name, and their build.
type tree struct {
	files map[string]asset
	build string
}

// loaded is the embedded tree, read and compressed once, on first use: a
// process that serves no page (the CLI, an exec task's init) does not
// pay for it. index.html is kept as rewritten by versionIndex.
var loaded = sync.OnceValue(func() tree {
	out := map[string]asset{}
	err := fs.WalkDir(static, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		ctype, ok := contentTypes[path.Ext(p)]
		if !ok {
			return nil
		}
		body, err := fs.ReadFile(static, p)
		if err != nil {
			return err
		}
		out[p] = asset{body: body, ctype: ctype}
		return nil
	})
	if err != nil {
		panic(err)
	}
	build := buildOf(out)
	if idx, ok := out["index.html"]; ok {
		idx.body = versionIndex(idx.body, build)
		out["index.html"] = idx
	}
	for p, a := range out {
		var buf bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
		if _, err := zw.Write(a.body); err == nil && zw.Close() == nil && buf.Len() < len(a.body) {
			a.gz = buf.Bytes()
			out[p] = a
		}
	}
	return tree{files: out, build: build}
})

// assets are the servable files (the embedded files of a known type), by
// name.
func assets() map[string]asset { return loaded().files }

// Build is the UI's build: the first 12 hex digits of a SHA-256 over the
// name and content of every file but index.html. The index names its
// scripts and stylesheet under /ui/v/BUILD/.
func Build() string { return loaded().build }

// buildOf hashes the files of files but index.html, in name order.
func buildOf(files map[string]asset) string {
	names := make([]string, 0, len(files))
	for name := range files {
		if name != "index.html" {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	h := sha256.New()
	for _, name := range names {
		h.Write([]byte(name))
		h.Write([]byte{0})
		h.Write(files[name].body)
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))[:12]
}

// fileRef is an attribute of index.html that names a script or a
// stylesheet under Prefix.
var fileRef = regexp.MustCompile(`((?:src|href)=")` + regexp.QuoteMeta(Prefix) + `([^"]+\.(?:js|css)")`)

// versionIndex rewrites index's references to scripts and stylesheets
// from /ui/NAME to /ui/v/BUILD/NAME. Modules import each other by
// relative paths, so the whole module graph is loaded under that path.
func versionIndex(index []byte, build string) []byte {
	return fileRef.ReplaceAll(index, []byte("${1}"+Prefix+versioned+build+"/${2}"))
}

// acceptsGzip reports whether r's Accept-Encoding allows gzip.
func acceptsGzip(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept-Encoding"), ",") {
		enc, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		if strings.EqualFold(strings.TrimSpace(enc), "gzip") {
			return strings.ReplaceAll(strings.TrimSpace(params), " ", "") != "q=0"
		}
	}
	return false
}

// Assets lists the servable files with their sizes in bytes, by name.
func Assets() map[string]int {
	out := map[string]int{}
	for name, a := range assets() {
		out[name] = len(a.body)
	}
	return out
}

// GzipSizes lists the servable files with the bytes sent to a client
// that accepts gzip, by name.
func GzipSizes() map[string]int {
	out := map[string]int{}
	for name, a := range assets() {
		out[name] = len(a.body)
		if a.gz != nil {
			out[name] = len(a.gz)
		}
	}
	return out
}
