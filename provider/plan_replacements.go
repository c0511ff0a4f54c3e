package provider

import (
	"sync"
)

// replacedMasters remembers, for one provider process, the masters a plan replaces. Terraform
// plans a replacement in two calls: first with the prior state (ModifyPlan asks for the
// replacement), then the create half with no prior state at all. The create half must not
// refuse the port, data dir and supervisor of the master it replaces (the destroy frees them
// before the create runs), so the first call records them here and the second finds them by
// the master's name and data_dir, which both calls plan from the same configuration.
type replacedMasters struct {
	mu    sync.Mutex
	byKey map[string]replacedMaster
}

// replacedMaster is what of the master being replaced the create half's checks may reuse.
type replacedMaster struct {
	Address string // host:port it listens on
	DataDir string // the data dir it runs in (its id: data_dir is "" when Read found it removed)
}

func replacementKey(name, dataDir string) string { return name + "\x00" + dataDir }

// remember records that the master planned as name in dataDir replaces old.
func (r *replacedMasters) remember(name, dataDir string, old replacedMaster) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.byKey == nil {
		r.byKey = map[string]replacedMaster{}
	}
	r.byKey[replacementKey(name, dataDir)] = old
}

// replaced returns the master that the master planned as name in dataDir replaces, if the
// plan of its prior state asked for a replacement.
func (r *replacedMasters) replaced(name, dataDir string) (replacedMaster, bool) {
	if r == nil {
		return replacedMaster{}, false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	old, ok := r.byKey[replacementKey(name, dataDir)]
	return old, ok
}
