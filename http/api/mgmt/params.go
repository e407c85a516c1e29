package mgmt

import "net/url"

// setParam sets key to value in params unless value is empty.
func setParam(params url.Values, key, value string) {
	if value != "" {
		params.Set(key, value)
	}
}
