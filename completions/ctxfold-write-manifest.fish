complete -c ctxfold-write-manifest -l session-id -d 'The session id, which names the manifest file (a plain file name)' -r
complete -c ctxfold-write-manifest -l source -d 'The file the parts were cut from; its sha256 and size (decompressed, for a `.zst`) are what the parts must rebuild' -r -F
complete -c ctxfold-write-manifest -l title -d 'The session\'s title' -r
complete -c ctxfold-write-manifest -l cwd -d 'The session\'s working directory' -r
complete -c ctxfold-write-manifest -l rollout-path -d 'Where restore puts the session back [default: the absolute path of --source, without the `.zst` of a compressed one: restore writes the plain JSONL, which Codex prefers]' -r
complete -c ctxfold-write-manifest -l field-threshold -d 'String values whose raw token is at least this many bytes become field parts' -r
complete -c ctxfold-write-manifest -l max-json-line-bytes -d 'Lines longer than this (with their newline) are not parsed, only chunked' -r
complete -c ctxfold-write-manifest -l cdc-min-bytes -d 'FastCDC minimum chunk size for the bytes between fields' -r
complete -c ctxfold-write-manifest -l cdc-average-bytes -d 'FastCDC average chunk size' -r
complete -c ctxfold-write-manifest -l cdc-max-bytes -d 'FastCDC maximum chunk size' -r
complete -c ctxfold-write-manifest -l store -d 'The store [default: $CTXFOLD_STORE, else $XDG_DATA_HOME/ctxfold, else ~/.local/share/ctxfold]' -r -f -a "(__fish_complete_directories)"
complete -c ctxfold-write-manifest -l archived -d 'Mark the session archived'
complete -c ctxfold-write-manifest -l overwrite -d 'Replace an existing manifest for this session'
complete -c ctxfold-write-manifest -s h -l help -d 'Print help (see more with \'--help\')'
complete -c ctxfold-write-manifest -s V -l version -d 'Print version'
