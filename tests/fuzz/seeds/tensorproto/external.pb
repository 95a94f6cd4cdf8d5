Bej
locationw.binj
offset0p