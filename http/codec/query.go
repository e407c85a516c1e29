package codec

import (
	"net/url"
	"strconv"
)

// BoolParam reads a boolean query parameter of q; absent is false,
// present without a value is true.
func BoolParam(q url.Values, name string) (bool, error) {
	vs, ok := q[name]
	if !ok {
		return false, nil
	}
	if len(vs) == 0 || vs[0] == "" {
		return true, nil
	}
	b, err := strconv.ParseBool(vs[0])
	if err != nil {
		return false, BadRequest("%s: %q is not a boolean", name, vs[0])
	}
	return b, nil
}

// IntParam reads an integer query parameter of q; absent is def.
func IntParam(q url.Values, name string, def int64) (int64, error) {
	v := q.Get(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, BadRequest("%s: %q is not an integer", name, v)
	}
	return n, nil
}
