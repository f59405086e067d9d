"""The desktop application (PySide6). Only this package imports Qt."""
