; Every call whose callee is a name or an attribute chain: the candidates for log statements.
; Which of them are log statements is decided by the configured callee patterns.
(call
  function: [(identifier) (attribute)] @callee
  arguments: (_) @arguments) @call
