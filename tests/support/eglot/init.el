;;; init.el --- Emacs for tests/lsp/test_lsp_eglot.py  -*- lexical-binding: t; -*-

;; `emacs -nw -q -l tests/support/eglot/init.el' in tmux: eglot (Debian's elpa-eglot) with the setup the
;; README gives (editors/lsp/eglot.el), started on TETHER_TEST_FILE. Every message and every
;; minibuffer prompt (with the text it starts with) is appended to TETHER_TEST_LOG, which the
;; test reads. The environment:
;;   TETHER_TEST_REPO      the repository (for editors/lsp/eglot.el)
;;   TETHER_LSP_CMD        `tether lsp --script FILE' as a JSON list
;;   TETHER_TEST_FILE      the file to open (in the test's project)
;;   TETHER_TEST_LOG       where to record
;;   TETHER_TEST_REQUEST_TIMEOUT  jsonrpc's request timeout (eglot's 10 s), shortened

(setq native-comp-deferred-compilation nil  ; no background compiles of the packages
      warning-minimum-level :error
      inhibit-startup-screen t
      make-backup-files nil
      auto-save-default nil
      create-lockfiles nil
      suggest-key-bindings nil
      eglot-autoreconnect nil)

(defvar tether-test-log (getenv "TETHER_TEST_LOG"))

(defun tether-test--record (text)
  (let ((coding-system-for-write 'utf-8)
        (inhibit-message t))
    (write-region (concat text "\n\f\n") nil tether-test-log t 'silent)))

(advice-add 'message :before
            (lambda (format-string &rest args)
              (when format-string
                (tether-test--record
                 (concat "MESSAGE: " (apply #'format-message format-string args))))))

(let ((default command-error-function))
  (setq command-error-function
        (lambda (data context caller)
          (tether-test--record (concat "ERROR: " (error-message-string data)))
          (funcall default data context caller))))

(add-hook 'minibuffer-setup-hook
          (lambda ()
            (tether-test--record
             (format "PROMPT: %s[%s]" (minibuffer-prompt) (minibuffer-contents-no-properties)))))

(load (expand-file-name "editors/lsp/eglot.el" (getenv "TETHER_TEST_REPO")) nil t)
(setq tether-lsp-command (json-parse-string (getenv "TETHER_LSP_CMD") :array-type 'list))
(let ((timeout (getenv "TETHER_TEST_REQUEST_TIMEOUT")))
  (when timeout
    (setq jsonrpc-default-request-timeout (string-to-number timeout))))

(find-file (getenv "TETHER_TEST_FILE"))
(apply #'eglot (eglot--guess-contact))
(tether-test--record "READY")
