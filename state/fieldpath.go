package state

import (
	"fmt"
)

// Fieldf returns the dotted path of element i of a request list, for
// errors: Fieldf("Allocs", 2, "ID") is "Allocs[2].ID", and
// Fieldf("Allocs", 2, "") is "Allocs[2]".
func Fieldf(list string, i int, field string) string {
	if field == "" {
		return fmt.Sprintf("%s[%d]", list, i)
	}
	return fmt.Sprintf("%s[%d].%s", list, i, field)
}
