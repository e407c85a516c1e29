package taskinput

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"text/template"

	"github.com/schedhq/sched/state"
)

// TemplateData is the value a template sees as its dot, so `{{ .Env.HOME }}`
// and `{{ env "HOME" }}` are the same thing:
//
//	.Env    map[string]string  the task environment (Input.Env)
//	.Meta   map[string]string  job, group and task meta merged (Input.Meta)
//	.Attrs  map[string]string  node attributes (Input.NodeAttrs)
//	.Node   NodeData           the node's identity (Input.Node)
//	.Task   string             the task name
//
// The functions are:
//
//	env "KEY"    the task environment variable, "" when unset
//	meta "key"   the merged meta value, "" when unset
//	attr "key"   the node attribute, "" when unset
//	node "field" one of ID, Name, Datacenter, NodeClass, NodePool; any
//	             other name fails the render
//
// A missing map key through the dot (`{{ .Meta.nope }}`) renders as "" too,
// like the functions.
type TemplateData struct {
	Env   map[string]string
	Meta  map[string]string
	Attrs map[string]string
	Node  NodeData
	Task  string
}

// NodeData is the node identity templates can read.
type NodeData struct {
	ID         string
	Name       string
	Datacenter string
	NodeClass  string
	NodePool   string
}

// templateData builds the dot of every template of in.
func templateData(in *Input) *TemplateData {
	d := &TemplateData{
		Env:   orEmpty(in.Env),
		Meta:  orEmpty(in.Meta),
		Attrs: orEmpty(in.NodeAttrs),
	}
	if in.Task != nil {
		d.Task = in.Task.Name
	}
	if n := in.Node; n != nil {
		d.Node = NodeData{ID: n.ID, Name: n.Name, Datacenter: n.Datacenter, NodeClass: n.NodeClass, NodePool: n.NodePool}
		if in.NodeAttrs == nil {
			d.Attrs = orEmpty(n.Attributes)
		}
	}
	return d
}

func orEmpty(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}

// funcs are the template functions over d.
func (d *TemplateData) funcs() template.FuncMap {
	return template.FuncMap{
		"env":  func(k string) string { return d.Env[k] },
		"meta": func(k string) string { return d.Meta[k] },
		"attr": func(k string) string { return d.Attrs[k] },
		"node": func(field string) (string, error) {
			switch field {
			case "ID":
				return d.Node.ID, nil
			case "Name":
				return d.Node.Name, nil
			case "Datacenter":
				return d.Node.Datacenter, nil
			case "NodeClass":
				return d.Node.NodeClass, nil
			case "NodePool":
				return d.Node.NodePool, nil
			}
			return "", fmt.Errorf("unknown node field %q: want ID, Name, Datacenter, NodeClass or NodePool", field)
		},
	}
}

// TemplateError says which template failed and why.
type TemplateError struct {
	DestPath string
	Err      error
}

func (e *TemplateError) Error() string { return fmt.Sprintf("template %q: %v", e.DestPath, e.Err) }

// Unwrap returns the cause, so errors.Is(err, ErrEscapes) works.
func (e *TemplateError) Unwrap() error { return e.Err }

// RenderTemplates renders every template of in.Task to its DestPath
// (relative to in.TaskDir) with its Perms, atomically (a temporary file in
// the same directory, then a rename), and returns the templates whose
// content changed: on the first render, every one. Perms are re-applied
// even when the content is unchanged. It stops at the first failure, which
// is a *TemplateError.
func RenderTemplates(in *Input) (changed []*state.Template, err error) {
	if in.Task == nil {
		return nil, nil
	}
	data := templateData(in)
	for _, t := range in.Task.Templates {
		if t == nil {
			continue
		}
		ok, err := renderOne(in, data, t)
		if err != nil {
			return changed, &TemplateError{DestPath: t.DestPath, Err: err}
		}
		if ok {
			changed = append(changed, t)
		}
	}
	return changed, nil
}

// renderOne renders t and reports whether its file changed.
func renderOne(in *Input, data *TemplateData, t *state.Template) (bool, error) {
	body, err := templateBody(in, t)
	if err != nil {
		return false, err
	}
	left, right := t.LeftDelim, t.RightDelim
	if left == "" {
		left = state.DefaultTemplateLeftDelim
	}
	if right == "" {
		right = state.DefaultTemplateRightDelim
	}
	tmpl, err := template.New(t.DestPath).Delims(left, right).Option("missingkey=zero").Funcs(data.funcs()).Parse(body)
	if err != nil {
		return false, fmt.Errorf("parse: %w", err)
	}
	var out bytes.Buffer
	if err := tmpl.Execute(&out, data); err != nil {
		return false, fmt.Errorf("execute: %w", err)
	}
	perm, err := parsePerms(t.Perms)
	if err != nil {
		return false, err
	}
	dest, err := insideDir(in.TaskDir, t.DestPath)
	if err != nil {
		return false, err
	}
	return writeIfChanged(dest, out.Bytes(), perm, in.own)
}

// templateBody is the embedded template, or the file at SourcePath
// (relative to the task directory, so an artifact can provide it).
func templateBody(in *Input, t *state.Template) (string, error) {
	if t.EmbeddedTmpl != "" || t.SourcePath == "" {
		return t.EmbeddedTmpl, nil
	}
	src, err := insideDir(in.TaskDir, t.SourcePath)
	if err != nil {
		return "", fmt.Errorf("source: %w", err)
	}
	b, err := os.ReadFile(src)
	if err != nil {
		return "", fmt.Errorf("source: %w", err)
	}
	return string(b), nil
}

// parsePerms reads an octal mode such as "0644"; empty is the default.
func parsePerms(s string) (os.FileMode, error) {
	if s == "" {
		s = state.DefaultTemplatePerms
	}
	p, err := strconv.ParseUint(s, 8, 12)
	if err != nil {
		return 0, fmt.Errorf("permissions %q are not an octal file mode", s)
	}
	return os.FileMode(p), nil
}

// writeIfChanged writes content to path with perm unless the file already
// holds exactly content, and reports whether it wrote. A write goes to a
// temporary file in the same directory first, so a reader never sees half a
// file. Perms and the owner (own) are set either way.
func writeIfChanged(path string, content []byte, perm os.FileMode, own func(string) error) (bool, error) {
	old, err := os.ReadFile(path)
	switch {
	case err == nil && bytes.Equal(old, content):
		if err := own(path); err != nil {
			return false, err
		}
		return false, os.Chmod(path, perm)
	case err != nil && !errors.Is(err, os.ErrNotExist):
		return false, err
	}
	return true, writeAtomic(path, content, perm, own)
}

// writeAtomic replaces path with content, creating parent directories;
// own gives the file to the task's user before it takes path's name.
func writeAtomic(path string, content []byte, perm os.FileMode, own func(string) error) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp) // no-op after the rename
	if _, err := f.Write(content); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	// CreateTemp makes 0600 and the umask does not apply to Chmod, so the
	// file gets exactly perm.
	if err := os.Chmod(tmp, perm); err != nil {
		return err
	}
	if err := own(tmp); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
