; What a statement calls, and functions it passes along as callbacks (e.g. wait_until(5, 1, check)).
; Bare names and attribute calls are told apart: `run(...)` is a call of a module function `run`,
; `process.run(...)` is not; `self.check(...)` is a call of a method `check`.
(call function: (identifier) @callee)
(call function: (attribute) @callee)
(argument_list (identifier) @ref)
(argument_list (attribute) @ref)
(keyword_argument value: (identifier) @ref)
(keyword_argument value: (attribute) @ref)
