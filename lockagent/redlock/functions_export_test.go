package redlock

// ScriptCount is the number of the library's scripts (each a function of FunctionLibrary).
func ScriptCount() int { return len(allScripts) }
