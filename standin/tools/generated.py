"""What the stand-in's table generators share: write a generated file only when
its text changes, so that a rebuild does not recompile what includes it."""


def write_if_changed(output, text):
    try:
        with open(output, encoding="utf-8") as f:
            if f.read() == text:
                return
    except OSError:
        pass
    with open(output, "w", encoding="utf-8") as f:
        f.write(text)
